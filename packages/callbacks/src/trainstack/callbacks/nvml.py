"""GPU utilization through NVML: the few calls GPUUtilizationTracker needs, over ``pynvml``.

``pynvml`` comes from nvidia-ml-py, NVIDIA's binding, an optional dependency
(``pip install 'trainstack-callbacks[gpu]'``). Without it, or without an NVIDIA
driver, :class:`NVML` raises :class:`NVMLError` and the tracker does nothing.
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

try:
    import pynvml
except ImportError:  # the optional extra is not installed
    pynvml = None

__all__ = ["NVML", "NVMLError"]


class NVMLError(RuntimeError):
    """NVML is missing, or one of its calls failed."""


@contextlib.contextmanager
def _calling(what: str) -> Iterator[None]:
    """Raise pynvml's errors (and a missing library) as :class:`NVMLError`, naming ``what``."""
    try:
        yield
    except pynvml.NVMLError as e:
        code = getattr(e, "value", None)
        raise NVMLError(f"NVML {what} failed: {e} (code {code})") from None


class NVML:
    """An initialized NVML session; use as a context manager or call :meth:`shutdown`."""

    def __init__(self) -> None:
        if pynvml is None:
            raise NVMLError("nvidia-ml-py is not installed (pip install 'trainstack-callbacks[gpu]')")
        with _calling("nvmlInit"):
            pynvml.nvmlInit()

    def __enter__(self) -> NVML:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    def shutdown(self) -> None:
        with _calling("nvmlShutdown"):
            pynvml.nvmlShutdown()

    def device_count(self) -> int:
        with _calling("nvmlDeviceGetCount"):
            return int(pynvml.nvmlDeviceGetCount())

    def handle(self, device: int | str) -> Any:
        """The handle of a device given by NVML index or by UUID ("GPU-...", "MIG-...")."""
        with _calling(f"getting the handle of GPU {device!r}"):
            if isinstance(device, int):
                return pynvml.nvmlDeviceGetHandleByIndex(device)
            return pynvml.nvmlDeviceGetHandleByUUID(device)

    def utilization(self, handle: Any) -> int:
        """Percent of the last sample period (1/6 s to 1 s) during which a kernel ran."""
        with _calling("nvmlDeviceGetUtilizationRates"):
            return int(pynvml.nvmlDeviceGetUtilizationRates(handle).gpu)
