"""tensorpack 0.11's ``tensorpack.callbacks.prof``: its names from ``trainstack.callbacks``, and tensorpack's
``GPUMemoryTracker`` and ``HostMemoryTracker`` of this layer."""
from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import tensorflow as tf

from trainstack.callbacks import GPUUtilizationTracker, GraphProfiler, PeakMemoryTracker, ThroughputTracker, logger
from trainstack.loop import Callback

from .._optional import require
from .._replaced import stand_in_names, unprovided

__all__ = ["GPUUtilizationTracker", "GraphProfiler", "PeakMemoryTracker", "GPUMemoryTracker", "HostMemoryTracker",
           "ThroughputTracker"] + stand_in_names(__name__)


class GPUMemoryTracker(Callback):
    """Puts each GPU's peak memory in MB (10**6 bytes) as ``PeakMemory(MB)/gpu:<i>`` after each epoch's last step,
    as tensorpack's: the allocator's peak since the process started (tensorpack's ``MaxBytesInUse`` op;
    here ``tf.config.experimental.get_memory_info``). Without a GPU it warns and tracks nothing, as tensorpack's.
    (trainstack's ``PeakMemoryTracker`` gives each epoch's own peak instead.)"""

    _chief_only = False

    def __init__(self, devices: Sequence[int | str] = (0,)) -> None:
        """
        Args:
            devices: the GPUs to track, indices or names (``'/gpu:0'``).
        """
        if not isinstance(devices, (list, tuple)):
            raise TypeError(f"GPUMemoryTracker(devices=...) must be a list or tuple, got {devices!r}")
        self._devices = [f"/gpu:{x}" if isinstance(x, int) else x for x in devices]
        self._tf_devices = [_tf_gpu_name(d) for d in self._devices]
        self._disabled = False

    def _before_train(self) -> None:
        visible = [d.name.split("device:")[-1] for d in tf.config.list_logical_devices("GPU")]
        if not visible:
            self._disabled = True
            logger.warning("GPUMemoryTracker only supports GPU!")
            return
        missing = [d for d in self._tf_devices if d not in visible]
        if missing:
            raise ValueError(f"GPUMemoryTracker: TensorFlow sees no {missing}; visible GPUs: {visible}")

    def _trigger_epoch(self) -> None:
        if self._disabled:
            return
        for dev, tf_dev in zip(self._devices, self._tf_devices):
            peak = tf.config.experimental.get_memory_info(tf_dev)["peak"]
            assert self.trainer.monitors is not None  # set by setup_callbacks
            self.trainer.monitors.put_scalar("PeakMemory(MB)" + dev, peak / 1e6)


def _tf_gpu_name(device: str) -> str:
    """'/gpu:0', '/device:GPU:0', 'GPU:0' -> 'GPU:0'."""
    match = re.fullmatch(r"/?(?:device:)?gpu:(\d+)", device, flags=re.IGNORECASE)
    if match is None:
        raise ValueError(f"GPUMemoryTracker: {device!r} is not a GPU; expected an index or a name like '/gpu:0'")
    return f"GPU:{match.group(1)}"


class HostMemoryTracker(Callback):
    """Puts the host's free RAM in GB (``psutil.virtual_memory().available / 1024**3``) as
    ``HostFreeMemory (GB)`` at each trigger, and logs it at setup and before training, as tensorpack's."""

    _chief_only = False

    def __init__(self) -> None:
        self._psutil: Any = require("psutil", "HostMemoryTracker", "psutil")

    def _setup_graph(self) -> None:
        logger.info(f"[HostMemoryTracker] Free RAM in setup_graph() is {self._free_ram_gb():.2f} GB.")

    def _before_train(self) -> None:
        logger.info(f"[HostMemoryTracker] Free RAM in before_train() is {self._free_ram_gb():.2f} GB.")

    def _trigger(self) -> None:
        assert self.trainer.monitors is not None  # set by setup_callbacks
        self.trainer.monitors.put_scalar("HostFreeMemory (GB)", self._free_ram_gb())

    def _free_ram_gb(self) -> float:
        return self._psutil.virtual_memory().available / 1024 ** 3


__getattr__ = unprovided(__name__)
