"""Dataflows that produce data from Python objects: a list, a generator, an iterable, random arrays."""
from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from trainstack.loop.checks import check_int

from .base import DataFlow, RNGDataFlow, SizeUnknownError

__all__ = ["DataFromList", "DataFromGenerator", "DataFromIterable", "FakeData", "DataFromQueue"]


class DataFromList(RNGDataFlow):
    """The elements of ``lst``, each a datapoint; in a new random order every pass when
    ``shuffle`` (the default, as in tensorpack; the order comes from ``self.rng``)."""

    def __init__(self, lst: Sequence[Any], shuffle: bool = True) -> None:
        super().__init__()
        self.lst = lst
        self.shuffle = shuffle

    def __len__(self) -> int:
        return len(self.lst)

    def __iter__(self) -> Iterator[Any]:
        if not self.shuffle:
            yield from self.lst
            return
        order = np.arange(len(self.lst))
        self._require_rng().shuffle(order)
        for k in order:
            yield self.lst[int(k)]


class DataFromGenerator(DataFlow):
    """The datapoints of ``gen``: an iterable, or a callable returning a fresh iterable for each
    pass (a generator object can only be iterated once). Its size is ``len(gen)`` when that exists."""

    def __init__(self, gen: Iterable[Any] | Callable[[], Iterable[Any]]) -> None:
        self._gen = gen

    def __iter__(self) -> Iterator[Any]:
        yield from (self._gen() if callable(self._gen) else self._gen)

    def __len__(self) -> int:
        try:
            return len(self._gen)  # type: ignore[arg-type]  # no __len__: TypeError, below
        except TypeError:
            raise SizeUnknownError("DataFromGenerator does not know its size: its generator has "
                                      "no __len__") from None


class DataFromIterable(DataFlow):
    """The datapoints of ``iterable`` (re-iterated each pass); its size when it has one."""

    def __init__(self, iterable: Iterable[Any]) -> None:
        self._itr = iterable
        try:
            self._len: int | None = len(iterable)  # type: ignore[arg-type]  # no __len__: TypeError, below
        except TypeError:
            self._len = None

    def __len__(self) -> int:
        if self._len is None:
            raise SizeUnknownError("DataFromIterable over an iterable without __len__ has no size")
        return self._len

    def __iter__(self) -> Iterator[Any]:
        yield from self._itr


class FakeData(RNGDataFlow):
    """``size`` datapoints of uniform random arrays of ``shapes`` (one per component) in
    ``domain`` (``(min, max)``, or one per component), of ``dtype`` (one, or one per component).

    With ``random=False`` the arrays are drawn once per pass and every datapoint of the pass
    repeats them (cheaper when generating them is what you would be measuring).
    """

    def __init__(self, shapes: Sequence[Sequence[int]], size: int = 1000, random: bool = True,
                 dtype: str | Sequence[str] = "float32",
                 domain: tuple[float, float] | Sequence[tuple[float, float]] = (0, 1)) -> None:
        super().__init__()
        self.shapes = [tuple(int(d) for d in shape) for shape in shapes]
        self._size = check_int("FakeData", "size", size, minimum=0)
        self.random = random
        self.dtype = [dtype] * len(shapes) if isinstance(dtype, (str, np.dtype, type)) else list(dtype)
        self.domain = [domain] * len(shapes) if isinstance(domain, tuple) else list(domain)
        if len(self.dtype) != len(self.shapes) or len(self.domain) != len(self.shapes):
            raise ValueError(f"FakeData: {len(self.shapes)} shapes need as many dtypes and domains, got "
                             f"{len(self.dtype)} dtypes and {len(self.domain)} domains")

    def __len__(self) -> int:
        return self._size

    def _draw(self) -> list[np.ndarray]:
        rng = self._require_rng()
        return [(rng.rand(*shape) * (high - low) + low).astype(dtype)
                for shape, dtype, (low, high) in zip(self.shapes, self.dtype, self.domain)]

    def __iter__(self) -> Iterator[list[np.ndarray]]:
        if self.random:
            for _ in range(self._size):
                yield self._draw()
        else:
            fixed = self._draw()
            for _ in range(self._size):
                yield copy.copy(fixed)


class DataFromQueue(DataFlow):
    """The items of ``queue`` (anything with a blocking ``get()``: ``queue.Queue``,
    ``multiprocessing.Queue``), each a datapoint, as they are put; a pass never ends and has no
    size, as in tensorpack."""

    def __init__(self, queue: Any) -> None:
        if not callable(getattr(queue, "get", None)):
            raise TypeError(f"DataFromQueue needs a queue with a get() method, got {type(queue).__name__}")
        self.queue = queue

    def __iter__(self) -> Iterator[Any]:
        while True:
            yield self.queue.get()
