"""tensorpack's :class:`TestDataSpeed`: how many datapoints per second a dataflow produces."""
from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import tqdm

from .base import ProxyDataFlow

__all__ = ["TestDataSpeed"]


class TestDataSpeed(ProxyDataFlow):
    """Fetch ``size`` datapoints of ``ds`` (after ``warmup`` more) under a tqdm progress bar,
    as tensorpack's. :meth:`start` runs the test and returns the datapoints per second (an
    addition: tensorpack's returns None); iterating this dataflow runs the test, then yields the
    datapoints of ``ds``. ``ds.reset_state()`` is called by :meth:`start` unless
    ``reset_state`` was."""

    __test__ = False  # not a pytest test class

    def __init__(self, ds: Any, size: int = 5000, warmup: int = 0) -> None:
        super().__init__(ds)
        self.test_size = int(size)
        self.warmup = int(warmup)
        if self.test_size < 1 or self.warmup < 0:
            raise ValueError(f"TestDataSpeed: size must be >= 1 and warmup >= 0, got size={size}, warmup={warmup}")
        self._reset_called = False
        self.speed: float | None = None
        self.count = 0

    def reset_state(self) -> None:
        self._reset_called = True
        super().reset_state()

    def __iter__(self) -> Iterator[Any]:
        self.start()
        yield from self.ds

    def start(self) -> float:
        """Run the test with a progress bar; the datapoints per second (also ``self.speed``;
        ``self.count`` is how many were fetched: fewer than ``size`` if ``ds`` ended first)."""
        if not self._reset_called:
            super().reset_state()
        itr = iter(self.ds)
        bar = dict(dynamic_ncols=True, ascii=True)
        if self.warmup:
            for _ in tqdm.trange(self.warmup, smoothing=0.5, **bar):
                next(itr)
        self.count = 0
        start = time.perf_counter()
        with tqdm.tqdm(total=self.test_size, leave=True, smoothing=0.2, **bar) as pbar:
            for _ in itr:
                self.count += 1
                pbar.update()
                if self.count == self.test_size:
                    break
        elapsed = time.perf_counter() - start
        self.speed = self.count / elapsed if elapsed > 0 else float("inf")
        return self.speed
