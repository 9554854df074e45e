"""Per-epoch GPU statistics: utilization (through NVML) and peak memory (through TensorFlow).

Both trackers run on every process (``chief_only`` is False) and, without a
GPU, say so once at setup and do nothing.
"""
from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Sequence

import tensorflow as tf

from trainstack.loop import Callback
from trainstack.loop.checks import is_int

from .nvml import NVML, NVMLError

__all__ = ["GPUUtilizationTracker", "PeakMemoryTracker"]

logger = logging.getLogger("trainstack.callbacks")


class GPUUtilizationTracker(Callback):
    """Put each GPU's average utilization (percent) over each epoch as ``GPUUtil/<device>``.

    A background thread reads NVML every ``interval`` seconds while the
    epoch's steps run (other callbacks' ``trigger_epoch`` is not counted);
    an epoch shorter than ``interval`` still gets one reading, at its end.
    ``devices`` are NVML indices or UUIDs; by default those in
    ``CUDA_VISIBLE_DEVICES``, else all GPUs. NVML numbers GPUs in PCI bus
    order: set ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` for CUDA to agree.
    """

    _chief_only = False

    def __init__(self, devices: Sequence[int | str] | None = None, interval: float = 1.0) -> None:
        if devices is not None:
            devices = list(devices)
            if not devices or not all(isinstance(d, str) or is_int(d) for d in devices):
                raise ValueError("GPUUtilizationTracker: devices must be a non-empty list of GPU "
                                 f"indices or UUIDs, got {devices!r}")
        if not interval > 0:
            raise ValueError(f"GPUUtilizationTracker: interval must be positive, got {interval!r}")
        self._devices = devices
        self._interval = interval
        self._nvml: NVML | None = None
        self._handles: list = []
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._samples: list[list[int]] = []
        self._error: NVMLError | None = None

    def _setup_graph(self) -> None:
        try:
            self._nvml = NVML()
        except NVMLError as e:
            logger.warning("GPUUtilizationTracker: NVML is not available, GPU utilization will not "
                           "be tracked: %s", e)
            return
        if self._devices is None:
            self._devices = _visible_devices(self._nvml)
        if not self._devices:
            logger.warning("GPUUtilizationTracker: no GPU to track (CUDA_VISIBLE_DEVICES=%r)",
                           os.environ.get("CUDA_VISIBLE_DEVICES"))
            return
        self._handles = [self._nvml.handle(d) for d in self._devices]

    def _before_epoch(self) -> None:
        if not self._handles:
            return
        self._stop.clear()
        self._samples = []
        self._thread = threading.Thread(target=self._sample, name="GPUUtilizationTracker", daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        assert self._nvml is not None
        try:
            while not self._stop.wait(self._interval):
                self._samples.append([self._nvml.utilization(h) for h in self._handles])
            if not self._samples:
                self._samples.append([self._nvml.utilization(h) for h in self._handles])
        except NVMLError as e:
            self._error = e

    def _stop_sampling(self) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None

    def _after_epoch(self) -> None:
        self._stop_sampling()
        error, self._error = self._error, None
        if error is not None:
            logger.error("GPUUtilizationTracker: reading the GPUs failed, tracking stops: %s", error)
            self._handles, self._samples = [], []

    def _trigger_epoch(self) -> None:
        if not self._samples:
            return
        assert self.trainer.monitors is not None and self._devices is not None
        for i, device in enumerate(self._devices):
            mean = sum(s[i] for s in self._samples) / len(self._samples)
            self.trainer.monitors.put_scalar(f"GPUUtil/{device}", mean)
        self._samples = []

    def _after_train(self) -> None:
        self._stop_sampling()
        if self._nvml is not None:
            nvml, self._nvml = self._nvml, None
            nvml.shutdown()


def _visible_devices(nvml: NVML) -> list[int | str]:
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is None:
        return list(range(nvml.device_count()))
    return [int(d) if d.strip().isdigit() else d.strip() for d in env.split(",") if d.strip()]


class PeakMemoryTracker(Callback):
    """Put each GPU's peak memory of each epoch, in MB (10**6 bytes), as ``PeakMemory(MB)/GPU:<i>``.

    Uses TensorFlow's allocator statistics: reset at ``before_epoch``, read
    at ``trigger_epoch``. ``devices`` are TensorFlow GPU indices or names
    ("GPU:0"); by default all GPUs TensorFlow sees.
    """

    _chief_only = False

    def __init__(self, devices: Sequence[int | str] | None = None) -> None:
        self._devices = None if devices is None else [_tf_gpu_name(d) for d in devices]

    def _setup_graph(self) -> None:
        visible = [d.name.split("device:")[-1] for d in tf.config.list_logical_devices("GPU")]
        if self._devices is None:
            self._devices = visible
        missing = [d for d in self._devices if d not in visible]
        if missing:
            raise ValueError(f"PeakMemoryTracker: TensorFlow sees no {missing}; visible GPUs: {visible}")
        if not self._devices:
            logger.warning("PeakMemoryTracker: TensorFlow sees no GPU; peak memory will not be tracked")

    def _before_epoch(self) -> None:
        assert self._devices is not None  # set by _setup_graph
        for device in self._devices:
            tf.config.experimental.reset_memory_stats(device)

    def _trigger_epoch(self) -> None:
        assert self.trainer.monitors is not None and self._devices is not None
        for device in self._devices:
            peak = tf.config.experimental.get_memory_info(device)["peak"]
            self.trainer.monitors.put_scalar(f"PeakMemory(MB)/{device}", peak / 1e6)


def _tf_gpu_name(device: int | str) -> str:
    """0, "gpu:0", "/device:GPU:0" -> "GPU:0"."""
    if is_int(device, minimum=0):
        return f"GPU:{device}"
    match = re.fullmatch(r"(?:/?device:)?(?:/?gpu:)(\d+)", str(device), flags=re.IGNORECASE)
    if match is None:
        raise ValueError(f"PeakMemoryTracker: {device!r} is not a GPU; expected an index or "
                         "a name like 'GPU:0'")
    return f"GPU:{match.group(1)}"
