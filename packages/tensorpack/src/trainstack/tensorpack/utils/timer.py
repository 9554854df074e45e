"""tensorpack 0.11's ``tensorpack.utils.timer``: timing blocks and iterations."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from time import perf_counter as timer

from trainstack.callbacks import logger

from .._replaced import unprovided

__all__ = ["timed_operation", "IterSpeedCounter", "Timer"]


@contextmanager
def timed_operation(msg: str, log_start: bool = False) -> Iterator[None]:
    """A block whose duration is logged as ``"<Msg> finished, time:1.0000 sec."``."""
    if not msg:
        raise AssertionError("timed_operation() needs a message")
    if log_start:
        logger.info(f"Start {msg} ...")
    start = timer()
    yield
    msg = msg[0].upper() + msg[1:]
    logger.info(f"{msg} finished, time:{timer() - start:.4f} sec.")


class IterSpeedCounter:
    """Call it in a loop: every ``print_every`` calls it logs the time per call."""

    def __init__(self, print_every: int, name: str | None = None) -> None:
        self.cnt = 0
        self.print_every = int(print_every)
        self.name = name if name else "IterSpeed"

    def reset(self) -> None:
        self.start = timer()

    def __call__(self) -> None:
        if self.cnt == 0:
            self.reset()
        self.cnt += 1
        if self.cnt % self.print_every != 0:
            return
        t = timer() - self.start
        logger.info(f"{self.name}: {t:.2f} sec, {self.cnt} times, {t / self.cnt:.3g} sec/time")


class Timer:
    """Seconds since the start (or :meth:`reset`), excluding the time it was paused."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self._start = timer()
        self._paused: float | bool = False
        self._total_paused = 0.0

    def pause(self) -> None:
        if self._paused is not False:
            raise AssertionError("Timer is already paused")
        self._paused = timer()

    def is_paused(self) -> bool:
        return self._paused is not False

    def resume(self) -> None:
        if self._paused is False:
            raise AssertionError("Timer is not paused")
        self._total_paused += timer() - float(self._paused)
        self._paused = False

    def seconds(self) -> float:
        if self._paused:
            self.resume()
            self.pause()
        return timer() - self._start - self._total_paused


__getattr__ = unprovided(__name__)
