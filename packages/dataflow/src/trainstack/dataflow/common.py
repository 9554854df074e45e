"""Dataflows over other dataflows: batch, map, repeat, resize, concatenate, join, shuffle, print.

Each takes its input dataflow(s) first, as in tensorpack, and forwards
``reset_state`` to them. Datapoints are lists (or tuples) of components, or
dicts of them where noted.
"""
from __future__ import annotations

import itertools
import logging
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from copy import copy
from typing import Any

import numpy as np

from trainstack.loop.checks import check_int

from .base import DataFlow, DataFlowReentrantGuard, ProxyDataFlow, RNGDataFlow, SizeUnknownError, get_rng, len_of
from .protocol import reset_dataflow

__all__ = ["BatchData", "MapData", "MapDataComponent", "SelectComponent", "RepeatedData",
           "RepeatedDataPoint", "FixedSizeData", "ConcatData", "JoinData", "LocallyShuffleData",
           "CacheData", "PrintData"]

logger = logging.getLogger("trainstack.dataflow")


class BatchData(ProxyDataFlow):
    """Stack ``batch_size`` consecutive datapoints into one: component ``k`` of the batch holds
    component ``k`` of each datapoint, stacked into a NumPy array with a new first axis (or a
    list of them with ``use_list=True``). Dict datapoints give dict batches, key by key.

    Python ints become int32, floats float32, bools bool, str/bytes NumPy strings; arrays and
    NumPy scalars keep their dtype. Components must have one shape within a batch.

    With ``remainder=False`` the datapoints left at the end of a pass (fewer than
    ``batch_size``) are dropped, so every batch is full; with ``remainder=True`` they form a
    last, smaller batch. ``len`` counts batches accordingly.
    """

    def __init__(self, ds: Any, batch_size: int, remainder: bool = False, use_list: bool = False) -> None:
        super().__init__(ds)
        self.batch_size = check_int("BatchData", "batch_size", batch_size, minimum=1)
        if not remainder:
            try:
                size = len_of(ds)
            except NotImplementedError:
                size = None
            if size is not None and self.batch_size > size:
                raise ValueError(f"BatchData: batch_size {self.batch_size} is larger than the "
                                 f"{size} datapoints of the dataflow, so with remainder=False it "
                                 "would never yield a batch")
        self.remainder = remainder
        self.use_list = use_list

    def __len__(self) -> int:
        full, rest = divmod(len_of(self.ds), self.batch_size)
        return full + int(self.remainder and rest > 0)

    def __iter__(self) -> Iterator[Any]:
        holder: list[Any] = []
        for datapoint in self.ds:
            holder.append(datapoint)
            if len(holder) == self.batch_size:
                yield BatchData.aggregate_batch(holder, self.use_list)
                holder = []
        if self.remainder and holder:
            yield BatchData.aggregate_batch(holder, self.use_list)

    @staticmethod
    def _batch_numpy(data_list: list[Any], component: Any) -> np.ndarray:
        first = data_list[0]
        if type(first) is bool:
            dtype: Any = "bool"
        elif isinstance(first, int):
            dtype = "int32"
        elif type(first) is float:
            dtype = "float32"
        elif isinstance(first, (bytes, str)):
            dtype = None  # NumPy picks the string width
        else:
            dtype = getattr(first, "dtype", None)
            if dtype is None:
                raise TypeError(f"BatchData: cannot batch component {component!r} of type "
                                f"{type(first).__name__}; use_list=True keeps such components as lists")
        try:
            return np.asarray(data_list, dtype=dtype)
        except (ValueError, TypeError) as e:
            shapes = [np.shape(x) for x in data_list]
            raise ValueError(f"BatchData: cannot stack component {component!r} of {len(data_list)} "
                             f"datapoints into one array (shapes {shapes}): {e}") from None

    @staticmethod
    def aggregate_batch(data_holder: list[Any], use_list: bool = False) -> Any:
        """One batched datapoint (list or dict, like the datapoints) from ``data_holder``."""
        first = data_holder[0]
        if isinstance(first, (list, tuple)):
            keys: Sequence[Any] = range(len(first))
        elif isinstance(first, Mapping):
            keys = list(first.keys())
        else:
            raise ValueError(f"BatchData: a datapoint must be a list, tuple or dict, got "
                             f"{type(first).__name__}")
        columns = {}
        for key in keys:
            try:
                column = [dp[key] for dp in data_holder]
            except (IndexError, KeyError):
                raise ValueError(f"BatchData: the datapoints of one batch disagree on their "
                                 f"components: some lack component {key!r}") from None
            columns[key] = column if use_list else BatchData._batch_numpy(column, key)
        return columns if isinstance(first, Mapping) else [columns[k] for k in keys]


class MapData(ProxyDataFlow):
    """``func(datapoint)`` for each datapoint of ``ds``; a ``None`` result drops the datapoint
    (then ``len`` is an upper bound). ``func`` gets a shallow copy of the datapoint."""

    def __init__(self, ds: Any, func: Callable[[Any], Any]) -> None:
        super().__init__(ds)
        self.func = func

    def __iter__(self) -> Iterator[Any]:
        for datapoint in self.ds:
            result = self.func(copy(datapoint))
            if result is not None:
                yield result


class _ComponentMapper:
    """Picklable ``datapoint -> datapoint`` applying ``func`` to component ``index``."""

    def __init__(self, func: Callable[[Any], Any], index: Any) -> None:
        self.func, self.index = func, index

    def __call__(self, datapoint: Any) -> Any:
        result = self.func(datapoint[self.index])
        if result is None:
            return None
        datapoint = list(datapoint) if isinstance(datapoint, tuple) else copy(datapoint)
        datapoint[self.index] = result
        return datapoint


class MapDataComponent(MapData):
    """``func`` applied to component ``index`` (an int, or a key of dict datapoints) of each
    datapoint; the other components are kept. A ``None`` result drops the datapoint."""

    def __init__(self, ds: Any, func: Callable[[Any], Any], index: Any = 0) -> None:
        self._index, self._func = index, func
        super().__init__(ds, _ComponentMapper(func, index))


class _Select:
    def __init__(self, idxs: Sequence[Any]) -> None:
        self.idxs = list(idxs)

    def __call__(self, datapoint: Any) -> list[Any]:
        return [datapoint[i] for i in self.idxs]


def SelectComponent(ds: Any, idxs: Sequence[Any]) -> MapData:  # noqa: N802 - tensorpack's name
    """The components ``idxs`` (indices or keys, in that order) of each datapoint, as a list."""
    return MapData(ds, _Select(idxs))


class RepeatedData(ProxyDataFlow):
    """The passes of ``ds`` one after the other, ``num`` times in one pass of this dataflow;
    ``num=-1`` repeats forever (and ``len`` then raises ``NotImplementedError``)."""

    def __init__(self, ds: Any, num: int) -> None:
        self.num = check_int("RepeatedData", "num", num, minimum=-1, note="-1: forever")
        super().__init__(ds)

    def __len__(self) -> int:
        if self.num == -1:
            raise SizeUnknownError("RepeatedData(num=-1) repeats forever: it has no size")
        return len_of(self.ds) * self.num

    def __iter__(self) -> Iterator[Any]:
        passes = itertools.count() if self.num == -1 else range(self.num)
        for _ in passes:
            yield from self.ds


class RepeatedDataPoint(ProxyDataFlow):
    """Each datapoint of ``ds`` ``num`` times in a row."""

    def __init__(self, ds: Any, num: int) -> None:
        self.num = check_int("RepeatedDataPoint", "num", num, minimum=1)
        super().__init__(ds)

    def __len__(self) -> int:
        return len_of(self.ds) * self.num

    def __iter__(self) -> Iterator[Any]:
        for datapoint in self.ds:
            for _ in range(self.num):
                yield datapoint


class FixedSizeData(ProxyDataFlow):
    """Passes of exactly ``size`` datapoints taken from ``ds``, restarting ``ds`` when it ends.

    With ``keep_state=True`` (the default) the next pass continues where the previous one
    stopped in ``ds``; with ``False`` each pass starts a fresh pass of ``ds``.
    """

    def __init__(self, ds: Any, size: int, keep_state: bool = True) -> None:
        super().__init__(ds)
        self._size = check_int("FixedSizeData", "size", size, minimum=0)
        self._keep = keep_state
        self.itr: Iterator[Any] | None = None
        self._guard = DataFlowReentrantGuard()

    def __len__(self) -> int:
        return self._size

    def reset_state(self) -> None:
        super().reset_state()
        self.itr = None

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without its running iterator of ``ds`` (a generator, which does not pickle): a
        worker process calls ``reset_state``, which drops it, before its first pass."""
        state = self.__dict__.copy()
        state["itr"] = None
        return state

    def __iter__(self) -> Iterator[Any]:
        with self._guard:
            if self.itr is None:
                self.itr = iter(self.ds)
            for _ in range(self._size):
                try:
                    datapoint = next(self.itr)
                except StopIteration:
                    self.itr = iter(self.ds)
                    try:
                        datapoint = next(self.itr)
                    except StopIteration:
                        raise RuntimeError(f"FixedSizeData: its dataflow {type(self.ds).__name__} "
                                           "yielded no datapoint in a whole pass") from None
                yield datapoint
            if not self._keep:
                self.itr = None


class ConcatData(DataFlow):
    """The passes of several dataflows one after the other, in the order given."""

    def __init__(self, df_lists: Sequence[Any]) -> None:
        self.df_lists = list(df_lists)

    def reset_state(self) -> None:
        for ds in self.df_lists:
            reset_dataflow(ds)

    def __len__(self) -> int:
        return sum(len_of(ds) for ds in self.df_lists)

    def __iter__(self) -> Iterator[Any]:
        for ds in self.df_lists:
            yield from ds


class JoinData(DataFlow):
    """Datapoints joined component-wise from several dataflows iterated side by side: lists are
    concatenated (``[c1, c2] + [c3] -> [c1, c2, c3]``), dicts merged. A pass stops when the
    shortest dataflow ends; ``len`` is the smallest size."""

    def __init__(self, df_lists: Sequence[Any]) -> None:
        self.df_lists = list(df_lists)
        try:
            sizes = [len_of(ds) for ds in self.df_lists]
        except NotImplementedError:
            return
        if len(set(sizes)) > 1:
            logger.info("JoinData: the joined dataflows have different sizes %s; a pass stops at the "
                        "shortest", sizes)

    def reset_state(self) -> None:
        seen: set[int] = set()
        for ds in self.df_lists:  # the same dataflow may be joined twice: reset it once
            if id(ds) not in seen:
                seen.add(id(ds))
                reset_dataflow(ds)

    def __len__(self) -> int:
        return min(len_of(ds) for ds in self.df_lists)

    def __iter__(self) -> Iterator[Any]:
        iterators = [iter(ds) for ds in self.df_lists]
        while True:
            try:
                parts = [next(it) for it in iterators]
            except StopIteration:
                return
            if isinstance(parts[0], Mapping):
                joined: dict[Any, Any] = {}
                for part in parts:
                    joined.update(part)
                yield joined
            else:
                yield list(itertools.chain.from_iterable(parts))


class LocallyShuffleData(ProxyDataFlow, RNGDataFlow):
    """An approximate shuffle through a buffer of ``buffer_size`` datapoints: datapoints of
    ``ds`` (repeated forever) enter the buffer, each ``num_reuse`` times; once it is full, each
    new one pushes the oldest out; the buffer is shuffled every ``shuffle_interval`` datapoints
    from ``ds`` (default ``buffer_size // 3``).

    Its passes mix datapoints of consecutive passes of ``ds`` and never end by themselves (as
    in tensorpack): take ``len(self)`` datapoints (``len(ds) * num_reuse``) for an epoch.
    Not reentrant.
    """

    def __init__(self, ds: Any, buffer_size: int, num_reuse: int = 1,
                 shuffle_interval: int | None = None) -> None:
        ProxyDataFlow.__init__(self, ds)
        buffer_size = check_int("LocallyShuffleData", "buffer_size", buffer_size, minimum=1)
        self.num_reuse = check_int("LocallyShuffleData", "num_reuse", num_reuse, minimum=1)
        self.q: deque[Any] = deque(maxlen=buffer_size)
        self.shuffle_interval = check_int("LocallyShuffleData", "shuffle_interval", shuffle_interval,
                                          minimum=1, none_ok=True) or max(1, buffer_size // 3)
        self._inf_ds = RepeatedData(ds, -1)
        self._inf_iter: Iterator[Any] | None = None
        self._iter_cnt = 0
        self._guard = DataFlowReentrantGuard()

    def reset_state(self) -> None:
        ProxyDataFlow.reset_state(self)
        RNGDataFlow.reset_state(self)
        self.q.clear()
        self._iter_cnt = 0
        self._inf_iter = iter(self._inf_ds)

    def __len__(self) -> int:
        return len_of(self.ds) * self.num_reuse

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without its running iterator of ``ds`` (a generator, which does not pickle): a
        worker process calls ``reset_state``, which makes a new one, before its first pass."""
        state = self.__dict__.copy()
        state["_inf_iter"] = None
        return state

    def __iter__(self) -> Iterator[Any]:
        with self._guard:
            rng = self._require_rng()
            if self._inf_iter is None:
                self._inf_iter = iter(self._inf_ds)
            for datapoint in self._inf_iter:
                self._iter_cnt = (self._iter_cnt + 1) % self.shuffle_interval
                if self._iter_cnt == 0:
                    rng.shuffle(self.q)
                for _ in range(self.num_reuse):
                    if len(self.q) == self.q.maxlen:
                        yield self.q.popleft()
                    self.q.append(datapoint)


class CacheData(ProxyDataFlow):
    """The first pass of ``ds``, kept in memory and replayed afterwards (shuffled each pass when
    ``shuffle``). A first pass stopped midway leaves the cache incomplete: iterate it fully."""

    def __init__(self, ds: Any, shuffle: bool = False) -> None:
        super().__init__(ds)
        self.shuffle = shuffle
        self.buffer: list[Any] = []
        self.rng: np.random.RandomState | None = None
        self._guard = DataFlowReentrantGuard()

    def reset_state(self) -> None:
        super().reset_state()
        if self.shuffle:
            self.rng = get_rng(self)
        self.buffer = []

    def __iter__(self) -> Iterator[Any]:
        with self._guard:
            if self.buffer:
                if self.shuffle:
                    if self.rng is None:
                        self.rng = get_rng(self)
                    self.rng.shuffle(self.buffer)
                yield from self.buffer
            else:
                for datapoint in self.ds:
                    yield datapoint
                    self.buffer.append(datapoint)


def _describe(value: Any, depth: int, max_depth: int, max_list: int) -> list[str]:
    pad = "  " * depth
    if isinstance(value, np.ndarray):
        span = f" in range [{value.min()}, {value.max()}]" if value.size and value.dtype.kind in "biuf" else ""
        return [f"{pad}ndarray:{value.dtype} of shape {value.shape}{span}"]
    if isinstance(value, (bool, int, float, np.generic)):
        return [f"{pad}{type(value).__name__} with value {value}"]
    if isinstance(value, (list, tuple)):
        lines = [f"{pad}{type(value).__name__} of len {len(value)}"]
        if depth < max_depth:
            for k, item in enumerate(value[:max_list]):
                sub = _describe(item, depth + 1, max_depth, max_list)
                lines.append(f"{'  ' * (depth + 1)}{k}: {sub[0].lstrip()}")
                lines.extend(sub[1:])
            if len(value) > max_list:
                lines.append(f"{'  ' * (depth + 1)}...")
        return lines
    return [f"{pad}{type(value).__name__}"]


class PrintData(ProxyDataFlow):
    """``ds`` unchanged, but the first ``num`` datapoints after ``reset_state`` are described
    (type, shape, dtype and range of each component) on stdout, for debugging."""

    def __init__(self, ds: Any, num: int = 1, name: str | None = None, max_depth: int = 3,
                 max_list: int = 3) -> None:
        super().__init__(ds)
        self.num, self.name, self.max_depth, self.max_list = num, name, max_depth, max_list
        self.cnt = 0

    def reset_state(self) -> None:
        super().reset_state()
        self.cnt = 0

    def describe(self, datapoint: Any) -> str:
        """The description of ``datapoint`` that PrintData logs."""
        items = datapoint.items() if isinstance(datapoint, Mapping) else enumerate(datapoint)
        lines = [f"datapoint {self.cnt}/{self.num} with {len(datapoint)} components consists of"]
        for key, value in items:
            sub = _describe(value, 1, self.max_depth, self.max_list)
            lines.append(f"  {key}: {sub[0].lstrip()}")
            lines.extend(sub[1:])
        return "\n".join(lines)

    def __iter__(self) -> Iterator[Any]:
        for datapoint in self.ds:
            if self.cnt < self.num:
                label = f" ({self.name})" if self.name is not None else ""
                print(f"contents of DataFlow{label}:\n{self.describe(datapoint)}", flush=True)
                self.cnt += 1
            yield datapoint
