"""tensorpack 0.11's ``tensorpack.utils.nvml``: ``NVMLContext``, NVIDIA's management library over ``pynvml``
(``pip install 'trainstack-callbacks[gpu]'``); without it, or without a driver, entering the context raises
``trainstack.callbacks.nvml.NVMLError`` (tensorpack raised its ``NvmlException``)."""
from __future__ import annotations

from typing import Any

from trainstack.callbacks.nvml import NVML

from .._replaced import unprovided

__all__ = ["NVMLContext"]


class NvidiaDevice:
    """One GPU: its memory (bytes) and utilization (percent)."""

    def __init__(self, handle: Any) -> None:
        self.hnd = handle

    def memory(self) -> dict[str, int]:
        """``{'total', 'free', 'used'}`` in bytes."""
        import pynvml  # noqa: PLC0415 - the optional extra, present once NVML initialized

        info = pynvml.nvmlDeviceGetMemoryInfo(self.hnd)
        return {"total": int(info.total), "free": int(info.free), "used": int(info.used)}

    def utilization(self) -> dict[str, int]:
        """``{'gpu', 'memory'}`` in percent."""
        import pynvml  # noqa: PLC0415

        rates = pynvml.nvmlDeviceGetUtilizationRates(self.hnd)
        return {"gpu": int(rates.gpu), "memory": int(rates.memory)}

    def name(self) -> str:
        import pynvml  # noqa: PLC0415

        name = pynvml.nvmlDeviceGetName(self.hnd)
        return name.decode("utf-8") if isinstance(name, bytes) else str(name)


class NVMLContext:
    """``with NVMLContext() as ctx: ctx.num_devices(); ctx.devices(); ctx.device(i).memory()``."""

    def __enter__(self) -> NVMLContext:
        self._nvml = NVML()
        return self

    def __exit__(self, *exc: object) -> None:
        self._nvml.shutdown()

    def num_devices(self) -> int:
        return self._nvml.device_count()

    def devices(self) -> list[NvidiaDevice]:
        return [self.device(i) for i in range(self.num_devices())]

    def device(self, idx: int) -> NvidiaDevice:
        num_dev = self.num_devices()
        if idx >= num_dev:
            raise AssertionError(f"Cannot obtain device {idx}: NVML only found {num_dev} devices.")
        return NvidiaDevice(self._nvml.handle(idx))


__getattr__ = unprovided(__name__)
