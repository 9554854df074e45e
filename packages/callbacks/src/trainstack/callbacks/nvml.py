"""A minimal NVML binding (ctypes on libnvidia-ml.so.1): GPU utilization, nothing else.

Kept to the few calls GPUUtilizationTracker needs, so that reading the GPUs
adds no dependency.
"""
from __future__ import annotations

import ctypes

__all__ = ["NVML", "NVMLError"]


class NVMLError(RuntimeError):
    """NVML is missing, or one of its calls failed."""


class _Utilization(ctypes.Structure):
    _fields_ = [("gpu", ctypes.c_uint), ("memory", ctypes.c_uint)]


class NVML:
    """An initialized NVML session; use as a context manager or call :meth:`shutdown`."""

    def __init__(self) -> None:
        try:
            self._lib = ctypes.CDLL("libnvidia-ml.so.1")
        except OSError as e:
            raise NVMLError(f"cannot load libnvidia-ml.so.1 (no NVIDIA driver?): {e}") from None
        self._lib.nvmlErrorString.restype = ctypes.c_char_p
        self._check("nvmlInit_v2", self._lib.nvmlInit_v2())

    def __enter__(self) -> "NVML":
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    def shutdown(self) -> None:
        self._check("nvmlShutdown", self._lib.nvmlShutdown())

    def device_count(self) -> int:
        count = ctypes.c_uint()
        self._check("nvmlDeviceGetCount_v2", self._lib.nvmlDeviceGetCount_v2(ctypes.byref(count)))
        return count.value

    def handle(self, device: int | str) -> ctypes.c_void_p:
        """The handle of a device given by NVML index or by UUID ("GPU-...", "MIG-...")."""
        handle = ctypes.c_void_p()
        if isinstance(device, int):
            ret = self._lib.nvmlDeviceGetHandleByIndex_v2(ctypes.c_uint(device), ctypes.byref(handle))
        else:
            ret = self._lib.nvmlDeviceGetHandleByUUID(device.encode(), ctypes.byref(handle))
        self._check(f"getting the handle of GPU {device!r}", ret)
        return handle

    def utilization(self, handle: ctypes.c_void_p) -> int:
        """Percent of the last sample period (1/6 s to 1 s) during which a kernel ran."""
        rates = _Utilization()
        self._check("nvmlDeviceGetUtilizationRates",
                    self._lib.nvmlDeviceGetUtilizationRates(handle, ctypes.byref(rates)))
        return rates.gpu

    def _check(self, what: str, ret: int) -> None:
        if ret != 0:
            message = self._lib.nvmlErrorString(ret).decode(errors="replace")
            raise NVMLError(f"NVML {what} failed: {message} (code {ret})")
