"""The runtime config: TensorFlow's process-wide settings, replacing TF1's session config.

tensorpack configured its runtime per session (``session_config=tf.ConfigProto(...)``,
``session_creator=...``). TensorFlow 2 has no session: threads, device placement, GPU
memory and XLA are process-wide ``tf.config`` settings, and most of them are fixed the
moment TensorFlow initializes its devices (the first tensor, variable, model or
``tf.function`` call). :class:`RuntimeConfig` gathers them; call ``apply()`` at the
start of the program.

``trainstack.tensorpack``'s TrainConfig names the RuntimeConfig of a ``ConfigProto``.
"""
from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from typing import Any

import tensorflow as tf

from trainstack.loop.checks import check_bool, check_int, is_int

__all__ = ["RuntimeConfig"]

logger = logging.getLogger("trainstack.towers")

_TOO_LATE = ("TensorFlow has already initialized its devices, after which this setting cannot change. "
             "Call RuntimeConfig(...).apply() at the start of the program, before any tensor, variable, "
             "model or tf.function is created")


def _check_count(name: str, value: Any, minimum: int) -> None:
    check_int("RuntimeConfig", name, value, minimum=minimum, none_ok=True)


@dataclasses.dataclass(frozen=True)
class RuntimeConfig:
    """TensorFlow's process-wide runtime settings; ``apply()`` them before TensorFlow starts.

    None leaves a setting as TensorFlow has it.

    - ``intra_op_threads`` / ``inter_op_threads``: thread pool sizes (0: TensorFlow picks).
    - ``soft_placement``: run an op on another device when the requested one cannot run it.
    - ``gpu_memory_growth``: allocate GPU memory as needed instead of all of it up front.
    - ``xla``: True turns on XLA auto-clustering for every ``tf.function``; False turns it off.
      (A trainer's ``xla_compile`` compiles its step function alone.)
    - ``logical_cpu_devices``: split the CPU into this many logical devices (``/CPU:0`` ...),
      e.g. to run several towers on a machine without GPUs.
    - ``visible_gpus``: indices of the physical GPUs TensorFlow may use (``()``: none).
    """

    intra_op_threads: int | None = None
    inter_op_threads: int | None = None
    soft_placement: bool | None = True
    gpu_memory_growth: bool | None = True
    xla: bool | None = None
    logical_cpu_devices: int | None = None
    visible_gpus: Sequence[int] | None = None

    def __post_init__(self) -> None:
        _check_count("intra_op_threads", self.intra_op_threads, 0)
        _check_count("inter_op_threads", self.inter_op_threads, 0)
        _check_count("logical_cpu_devices", self.logical_cpu_devices, 1)
        for name in ("soft_placement", "gpu_memory_growth", "xla"):
            check_bool("RuntimeConfig", name, getattr(self, name), none_ok=True)
        if self.visible_gpus is not None:
            gpus = self.visible_gpus
            if isinstance(gpus, (str, bytes)) or not all(is_int(i, minimum=0) for i in gpus):
                raise ValueError(f"RuntimeConfig: visible_gpus must be a list of GPU indices (ints >= 0) "
                                 f"or None, got {gpus!r}")
            object.__setattr__(self, "visible_gpus", tuple(int(i) for i in gpus))

    # -- applying ------------------------------------------------------------------------------------
    def apply(self) -> None:
        """Apply the settings; safe to call again with the same settings.

        Raises RuntimeError naming the setting when TensorFlow has already initialized its
        devices and that setting differs from what it has.
        """
        gpus = tf.config.list_physical_devices("GPU")  # lists devices without initializing them
        if self.visible_gpus is not None:
            unknown = [i for i in self.visible_gpus if i >= len(gpus)]
            if unknown:
                raise ValueError(f"RuntimeConfig: visible_gpus={list(self.visible_gpus)} names GPUs "
                                 f"{unknown}, but this machine has {len(gpus)} GPU(s): {gpus}")
            wanted = [gpus[i] for i in self.visible_gpus]
            if [d.name for d in tf.config.get_visible_devices("GPU")] != [d.name for d in wanted]:
                _set("visible_gpus", self.visible_gpus, tf.config.set_visible_devices, wanted, "GPU")
        if self.gpu_memory_growth is not None:
            for gpu in tf.config.get_visible_devices("GPU"):
                if tf.config.experimental.get_memory_growth(gpu) != self.gpu_memory_growth:
                    _set("gpu_memory_growth", self.gpu_memory_growth,
                         tf.config.experimental.set_memory_growth, gpu, self.gpu_memory_growth)
        if self.logical_cpu_devices is not None:
            cpu = tf.config.list_physical_devices("CPU")[0]
            current = tf.config.get_logical_device_configuration(cpu)
            if (len(current) if current else 1) != self.logical_cpu_devices:
                _set("logical_cpu_devices", self.logical_cpu_devices,
                     tf.config.set_logical_device_configuration, cpu,
                     [tf.config.LogicalDeviceConfiguration() for _ in range(self.logical_cpu_devices)])
        if (self.intra_op_threads is not None
                and tf.config.threading.get_intra_op_parallelism_threads() != self.intra_op_threads):
            _set("intra_op_threads", self.intra_op_threads,
                 tf.config.threading.set_intra_op_parallelism_threads, self.intra_op_threads)
        if (self.inter_op_threads is not None
                and tf.config.threading.get_inter_op_parallelism_threads() != self.inter_op_threads):
            _set("inter_op_threads", self.inter_op_threads,
                 tf.config.threading.set_inter_op_parallelism_threads, self.inter_op_threads)
        if self.soft_placement is not None:
            tf.config.set_soft_device_placement(self.soft_placement)
        if self.xla is not None:
            tf.config.optimizer.set_jit("autoclustering" if self.xla else False)
        logger.info("Applied %r.", self)


def _set(setting: str, value: Any, setter: Callable, *args: Any) -> None:
    try:
        setter(*args)
    except RuntimeError as e:
        raise RuntimeError(f"RuntimeConfig.apply() cannot set {setting}={value!r}: {_TOO_LATE} ({e})") from e

