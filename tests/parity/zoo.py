"""tensorpack's dataflow classes, each built the same way through either library, to run inside the
multi-process runners (``parallel_cases.py``), and dataflows whose passes may yield nothing.

A module that imports neither library: builders take the library (``tensorpack.dataflow`` or
``trainstack.dataflow``) as an argument, and the classes here are found by name in the worker
processes of both.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from mapfuncs import double, identity


def ids(n: int) -> list[list[Any]]:
    return [[k, k * 10] for k in range(n)]


def shaped(n: int) -> list[list[Any]]:
    """Datapoints whose first component has one of two shapes (for ``BatchDataByShape``)."""
    return [[np.full((k % 2 + 1,), k, dtype=np.int64), k] for k in range(n)]


def add_ten(x: Any) -> Any:
    return x + 10


class ThreadSource:
    """A picklable ``get_df`` for ``MultiThreadRunner`` (a closure over the library is not)."""

    def __init__(self, lib_name: str, n: int) -> None:
        self.lib_name, self.n = lib_name, n

    def __call__(self) -> Any:
        import importlib  # noqa: PLC0415
        lib = importlib.import_module(f"{self.lib_name}.dataflow")
        return lib.DataFromList(ids(self.n), shuffle=False)


def _src(lib: Any, n: int = 6, shuffle: bool = False) -> Any:
    return lib.DataFromList(ids(n), shuffle=shuffle)


def _lib_name(lib: Any) -> str:
    return lib.__name__.split(".")[0]


#: name -> builder(lib) of a dataflow of each class of tensorpack's that runs without files or OpenCV
ZOO: dict[str, Callable[[Any], Any]] = {
    "DataFromList": lambda lib: _src(lib, shuffle=True),
    # (with a generator function it has no size, which tensorpack's runners cannot take: TypeError)
    "DataFromGenerator": lambda lib: lib.DataFromGenerator(ids(4)),
    "DataFromIterable": lambda lib: lib.DataFromIterable(ids(5)),
    "FakeData": lambda lib: lib.FakeData([[2, 3], [1]], size=5, random=False, dtype=["float32", "int32"]),
    "BatchData": lambda lib: lib.BatchData(_src(lib, 7), 3, remainder=True),
    "BatchDataByShape": lambda lib: lib.BatchDataByShape(lib.DataFromList(shaped(8), shuffle=False), 2, 0),
    "FixedSizeData": lambda lib: lib.FixedSizeData(_src(lib, 5), 3),
    "MapData": lambda lib: lib.MapData(_src(lib), double),
    "MapDataComponent": lambda lib: lib.MapDataComponent(_src(lib), add_ten, 1),
    "RepeatedData": lambda lib: lib.RepeatedData(_src(lib, 3), 2),
    "RepeatedDataPoint": lambda lib: lib.RepeatedDataPoint(_src(lib, 3), 2),
    "RandomChooseData": lambda lib: lib.RandomChooseData([_src(lib, 3), lib.DataFromList(ids(6)[3:], False)]),
    "RandomMixData": lambda lib: lib.RandomMixData([_src(lib, 3), lib.DataFromList(ids(6)[3:], False)]),
    "JoinData": lambda lib: lib.JoinData([_src(lib, 4), lib.MapData(_src(lib, 4), identity)]),
    "ConcatData": lambda lib: lib.ConcatData([_src(lib, 3), lib.DataFromList(ids(5)[3:], False)]),
    "LocallyShuffleData": lambda lib: lib.LocallyShuffleData(_src(lib, 6), 3),
    "CacheData": lambda lib: lib.CacheData(_src(lib, 5), shuffle=True),
    "MultiThreadMapData": lambda lib: lib.MultiThreadMapData(_src(lib, 5), 2, double, buffer_size=2,
                                                              strict=True),
    "MultiThreadRunner": lambda lib: lib.MultiThreadRunner(ThreadSource(_lib_name(lib), 4), 2, 1),
}


def observe_dp(value: Any) -> Any:
    """A datapoint as plain nested tuples (arrays as dtype, shape and values)."""
    if isinstance(value, np.ndarray):
        return ("ndarray", value.dtype.str, value.shape, value.tolist())
    if isinstance(value, np.generic):
        return ("scalar", value.dtype.str, value.item())
    if isinstance(value, (list, tuple)):
        return ("seq", *[observe_dp(v) for v in value])  # a tuple arrives as a list in trainstack
    return (type(value).__name__, value)


def fake_shapes(dp: Any) -> Any:
    """What ``FakeData`` fixes: components' dtypes and shapes (its values are random)."""
    return tuple((v.dtype.str, v.shape) for v in dp)


def summary(name: str, passes: list[list[Any]]) -> Any:
    """What a user can rely on from passes of ``ZOO[name]`` run by one worker process: each pass
    in order for those without randomness, the multiset of each pass for those that shuffle, and
    for those that draw datapoints at random the length of each pass and whether every datapoint
    is one of the source's."""
    if name == "FakeData":
        return [sorted(Counter(fake_shapes(dp) for dp in p).items()) for p in passes]
    observed = [[repr(observe_dp(dp)) for dp in p] for p in passes]
    if name in ("RandomChooseData", "LocallyShuffleData"):  # which datapoints come out is random
        universe = {repr(observe_dp(dp)) for dp in ids(6)}
        return [len(p) for p in observed], all(x in universe for p in observed for x in p)
    if name in ("DataFromList", "CacheData", "RandomMixData", "MultiThreadMapData", "MultiThreadRunner"):
        return [sorted(p) for p in observed]
    return observed


class EmptyEveryOtherPass:
    """A dataflow (of either library's base class) whose even passes yield nothing and whose odd
    passes yield ``ids(3)``; ``len`` is 3."""

    def __init__(self) -> None:
        self.count = 0

    def reset_state(self) -> None:
        self.count = 0

    def __len__(self) -> int:
        return 3

    def __iter__(self) -> Iterator[list[int]]:
        self.count += 1
        if self.count % 2 == 0:
            yield from ids(3)


class NeverYields:
    """A dataflow that yields nothing in every pass and says it has 3 datapoints."""

    def reset_state(self) -> None:
        pass

    def __len__(self) -> int:
        return 3

    def __iter__(self) -> Iterator[Any]:
        return iter(())
