"""Devices of the multi-GPU trainers: ``gpus`` arguments to device names, logical CPU devices.

A multi-GPU trainer takes ``gpus`` as

- a count ``n``: device indices ``0 .. n-1``;
- a list of device indices ``[0, 2]``;
- a list of device names (``"/gpu:0"``, ``"/device:CPU:1"``, ``tf.config.LogicalDevice``s).

Index ``k`` is GPU ``k`` when TensorFlow sees GPUs, else logical CPU device
``k``, so the same script trains on GPUs and, for testing, on several logical
CPU devices. A process has one CPU device unless it is split before
TensorFlow initializes its devices (its first tensor, variable or
``tf.function`` call)::

    from trainstack.towers import logical_cpu_devices, SyncMultiGPUTrainerReplicated
    devices = logical_cpu_devices(4)        # ["/device:CPU:0", ..., "/device:CPU:3"]
    trainer = SyncMultiGPUTrainerReplicated(devices)   # or (4): the same devices here

(``RuntimeConfig(logical_cpu_devices=4).apply()`` does the same split.) The
logical CPU devices share the machine's cores: they show what the multi-tower
code does, not a speed-up.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import tensorflow as tf

from trainstack.loop.checks import check_int

from .runtime import RuntimeConfig

__all__ = ["resolve_devices", "check_devices", "logical_cpu_devices", "all_gpus"]


def resolve_devices(gpus: Any, owner: str = "the trainer") -> list[str]:
    """Device names (``/device:GPU:1``, ``/device:CPU:0``) for a ``gpus`` argument (see the module
    docstring). Does not initialize TensorFlow's devices; :func:`check_devices` checks they exist."""
    if isinstance(gpus, bool):
        raise TypeError(f"{owner}: gpus must be a count, a list of device indices or a list of "
                        f"device names, got {gpus!r}")
    if isinstance(gpus, int):
        if gpus < 1:
            raise ValueError(f"{owner}: gpus={gpus} must be at least 1 (the number of towers)")
        gpus = list(range(gpus))
    elif isinstance(gpus, (str, tf.config.LogicalDevice, tf.DeviceSpec)):
        gpus = [gpus]
    if not isinstance(gpus, Sequence) or not gpus:
        raise TypeError(f"{owner}: gpus must be a count, a non-empty list of device indices or of "
                        f"device names, got {gpus!r}")
    index_kind = "GPU" if tf.config.get_visible_devices("GPU") else "CPU"  # initializes nothing
    devices = [_device_name(d, index_kind, owner) for d in gpus]
    duplicates = sorted({d for d in devices if devices.count(d) > 1})
    if duplicates:
        raise ValueError(f"{owner}: device(s) {duplicates} appear more than once in gpus={gpus!r}; "
                         "each tower needs its own device")
    return devices


def _device_name(device: Any, index_kind: str, owner: str) -> str:
    if isinstance(device, bool):
        raise TypeError(f"{owner}: {device!r} is not a device index or name")
    if isinstance(device, int):
        if device < 0:
            raise ValueError(f"{owner}: device index {device} is negative")
        return f"/device:{index_kind}:{device}"
    if isinstance(device, tf.config.LogicalDevice):
        device = device.name
    if isinstance(device, tf.DeviceSpec):
        spec = device
    elif isinstance(device, str):
        try:
            spec = tf.DeviceSpec.from_string(device if device.startswith("/") else "/" + device)
        except ValueError as e:
            raise ValueError(f"{owner}: {device!r} is not a device name such as '/gpu:0' or "
                             f"'/device:CPU:1' ({e})") from None
    else:
        raise TypeError(f"{owner}: {device!r} ({type(device).__name__}) is not a device index or name")
    if spec.device_type is None:
        raise ValueError(f"{owner}: device {device!r} names no device type; write e.g. '/gpu:0' or "
                         "'/device:CPU:1'")
    name = tf.DeviceSpec(device_type=spec.device_type.upper(), device_index=spec.device_index or 0)
    if spec.job is not None or spec.task is not None or spec.replica is not None:
        name = name.replace(job=spec.job, replica=spec.replica, task=spec.task)
    return name.to_string()


def check_devices(devices: Sequence[str], owner: str = "the trainer") -> None:
    """Raise a clear error when a device of ``devices`` does not exist in this process.

    Initializes TensorFlow's devices (call it when building the graph, not earlier).
    """
    existing = {_local_name(d.name): d.name for d in tf.config.list_logical_devices()}
    missing = [d for d in devices if _local_name(d) not in existing]
    if not missing:
        return
    cpus = len(tf.config.list_logical_devices("CPU"))
    gpus = len(tf.config.list_logical_devices("GPU"))
    raise ValueError(
        f"{owner}: device(s) {missing} do not exist; this process has {gpus} GPU(s) and {cpus} CPU "
        f"device(s) ({sorted(existing.values())}). Device indices are GPUs when there are GPUs, else "
        "logical CPU devices; split the CPU before TensorFlow initializes its devices with "
        "logical_cpu_devices(n) or RuntimeConfig(logical_cpu_devices=n).apply()")


def _local_name(device: str) -> str:
    spec = tf.DeviceSpec.from_string(device)
    return tf.DeviceSpec(device_type=spec.device_type, device_index=spec.device_index).to_string()


def logical_cpu_devices(n: int) -> list[str]:
    """Split the CPU into ``n`` logical devices; return their names ``/device:CPU:0 ..``.

    Call it at the start of the program, before TensorFlow initializes its
    devices (a RuntimeError says so otherwise); calling it again with the same
    ``n`` is fine. Changes nothing else of the runtime.
    """
    n = check_int("logical_cpu_devices", "n", n, minimum=1)
    RuntimeConfig(logical_cpu_devices=n, soft_placement=None, gpu_memory_growth=None).apply()
    return [f"/device:CPU:{k}" for k in range(n)]


def all_gpus(devices: Sequence[str]) -> bool:
    """Whether every device of ``devices`` is a GPU."""
    return all(tf.DeviceSpec.from_string(d).device_type == "GPU" for d in devices)
