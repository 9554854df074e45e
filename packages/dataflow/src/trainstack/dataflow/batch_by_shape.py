"""Batches of datapoints whose component ``idx`` has one shape: tensorpack's :class:`BatchDataByShape`."""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from .base import DataFlowReentrantGuard
from .common import BatchData

__all__ = ["BatchDataByShape"]


class BatchDataByShape(BatchData):
    """Batches of ``batch_size`` datapoints grouped by the shape of component ``idx`` (an
    array), so that a dataflow of mixed shapes (images of several sizes) can be batched; the
    other components must batch too. A datapoint waits in the group of its shape until the group
    is full; groups carry over from one pass to the next (datapoints of a rare shape may never
    come out). ``len`` is ``len(ds) // batch_size``, as :class:`BatchData`'s."""

    def __init__(self, ds: Any, batch_size: int, idx: Any) -> None:
        super().__init__(ds, batch_size, remainder=False)
        self.idx = idx
        self.holder: defaultdict[tuple[int, ...], list[Any]] = defaultdict(list)
        self._guard = DataFlowReentrantGuard()

    def reset_state(self) -> None:
        super().reset_state()
        self.holder = defaultdict(list)

    def __iter__(self) -> Iterator[Any]:
        with self._guard:
            for dp in self.ds:
                try:
                    shape = dp[self.idx].shape
                except AttributeError:
                    raise TypeError(f"BatchDataByShape: component {self.idx!r} must be a NumPy array, got "
                                    f"{type(dp[self.idx]).__name__}") from None
                holder = self.holder[shape]
                holder.append(dp)
                if len(holder) == self.batch_size:
                    yield BatchData.aggregate_batch(holder, self.use_list)
                    del holder[:]
