"""tensorpack's :class:`MultiProcessMapAndBatchData`: map *and batch* in worker processes,
built on :class:`MultiProcessMapData`'s workers.

Each worker gets a copy of a :class:`_MapAndBatch`: it maps every datapoint it is sent and
keeps the results until it has ``batch_size`` of them, then returns the batch
(:meth:`BatchData.aggregate_batch`); until then it returns None, which
:class:`MultiProcessMapData` drops. So batches are stacked in the workers, as in tensorpack,
and what comes back is one message per batch.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from trainstack.loop.checks import check_int

from .common import BatchData
from .parallel_map import MultiProcessMapData

__all__ = ["MultiProcessMapAndBatchData", "MultiProcessMapAndBatchDataZMQ"]


class _MapAndBatch:
    """``map_func`` then batching, with the state of one worker (its partial batch)."""

    def __init__(self, map_func: Callable[[Any], Any], batch_size: int) -> None:
        self.map_func, self.batch_size = map_func, batch_size
        self.holder: list[Any] = []

    def __call__(self, dp: Any) -> Any:
        result = self.map_func(dp)
        if result is None:
            return None
        self.holder.append(result)
        if len(self.holder) < self.batch_size:
            return None
        batch, self.holder = BatchData.aggregate_batch(self.holder), []
        return batch


class MultiProcessMapAndBatchData(MultiProcessMapData):
    """``BatchData(MapData(ds, map_func), batch_size)`` with the mapping and the batching done by
    ``num_proc`` worker processes: each worker batches the results of the datapoints it maps
    (a ``None`` result drops the datapoint), so a batch holds datapoints in arbitrary order,
    possibly from two passes of ``ds``. An endless stream, as tensorpack's; ``len`` is
    ``len(ds) // batch_size`` (batches per pass of ``ds``, an addition: tensorpack's has none).
    ``buffer_size``: datapoints (not batches) in flight, default ``batch_size * 10``; it must
    exceed ``batch_size``. With ``num_proc=1`` the batches are exactly those of
    ``BatchData(MapData(RepeatedData(ds, -1), map_func), batch_size)``.

    As in :class:`MultiProcessMapData`, ``map_func`` is pickled to the workers and datapoints
    travel as msgpack; workers stop on :meth:`close`, on an error, at collection or exit.
    """

    def __init__(self, ds: Any, num_proc: int, map_func: Callable[[Any], Any], batch_size: int,
                 buffer_size: int | None = None, *, start_method: str = "spawn") -> None:
        batch_size = check_int(type(self).__name__, "batch_size", batch_size, minimum=1)
        if buffer_size is None:
            buffer_size = batch_size * 10
        buffer_size = check_int(type(self).__name__, "buffer_size", buffer_size, minimum=batch_size + 1,
                                note="datapoints in flight, more than batch_size")
        if map_func is None or not callable(map_func):
            raise TypeError(f"{type(self).__name__} needs a callable map_func, got {map_func!r}")
        self.batch_size = batch_size
        self.user_map_func = map_func
        super().__init__(ds, num_proc, _MapAndBatch(map_func, batch_size), buffer_size=buffer_size,
                         strict=False, start_method=start_method)

    def __len__(self) -> int:
        return super().__len__() // self.batch_size


#: tensorpack's name of the same dataflow (there, on ZeroMQ)
MultiProcessMapAndBatchDataZMQ = MultiProcessMapAndBatchData
