"""ElasticFeedInput: a dataflow shared out among a changing number of Horovod ranks.

The datapoints of the dataflow's passes, one after the other, form one stream
(datapoint ``g`` is datapoint ``g % len(df)`` of pass ``g // len(df)`` when every
pass has ``len(df)`` of them). The input keeps one number, :attr:`position`:
how many datapoints of the stream the steps before have used. At each step rank
``r`` of ``size`` feeds datapoint ``position + r`` and every rank then moves the
position by ``size``. So the ranks of a step read disjoint datapoints, a step
reads the next ``size`` datapoints whatever the world size is, and a step that
starts at a position always reads the same datapoints. The elastic trainer
commits the position with the rest of the training state; after a membership
change every rank continues from the committed position with its new rank and
the new size: the input is re-sharded without dropping or repeating a datapoint.

Every rank must iterate the dataflow in the same order (no per-rank shuffling; a
seeded shuffle the same on every rank is fine), as for ``shard_dataflow``. Each
rank reads, and skips, the datapoints the others feed, as ShardedDataFlow does.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from trainstack.inputs import FeedInput
from trainstack.inputs.base import feed_name
from trainstack.inputs.dataflow import dataflow_size, numbered_passes, reset_dataflow
from trainstack.inputs.signature import check_datapoint_at

__all__ = ["ElasticFeedInput"]


class ElasticFeedInput(FeedInput):
    """Feeds datapoint ``position + rank`` of the stream at each step; see the module docstring.

    ``placement() -> (rank, size)`` is asked at every step (the trainer's live Horovod rank
    and size). :meth:`size` (the default ``steps_per_epoch``) is one pass shared by the
    ranks training at the start.
    """

    def __init__(self, dataflow: Any, placement: Callable[[], tuple[int, int]]) -> None:
        # no reading ahead: the rank and size of the next step are known only when it starts
        super().__init__(dataflow, prefetch=False)
        self._placement = placement
        #: datapoints of the stream the steps so far used (all ranks together)
        self.position = 0
        #: stream index of the datapoint this rank fed last (-1 before the first step)
        self.last_fed = -1
        self._stream: Iterator[tuple[int, int, Any]] | None = None
        self._stream_next = 0  # stream index of the datapoint self._stream yields next

    def placement_of(self, trainer: Any) -> bool:
        """Whether this input asks ``trainer`` for its placement (it was made for that trainer)."""
        return getattr(self._placement, "__self__", None) is trainer

    def _size(self) -> int:
        _, size = self._placement()
        n = dataflow_size(self.dataflow, f"{self.name}'s dataflow") // size
        if n == 0:
            raise ValueError(f"{self.name}: the dataflow has fewer datapoints than the {size} ranks; "
                             "an epoch (the default steps_per_epoch) would have no step")
        return n

    def _reset_state(self) -> None:
        reset_dataflow(self.dataflow)
        self._stream = None

    def _skip(self, n: int) -> bool:
        # exact resume from a checkpoint: the position is steps x ranks only for a run whose world
        # size never changed; ElasticHorovodTrainer sets it from the committed state instead
        self.position = n * self._placement()[1] // max(self._datapoints_per_step(), 1)
        return True

    def next_feeds(self) -> dict[str, Any]:
        """The feeds of the next step: datapoint ``position + rank``; the position moves by ``size``."""
        if self.num_towers != 1:
            raise ValueError(f"{self.name} feeds one tower per rank, not {self.num_towers}")
        rank, size = self._placement()
        index = self.position + rank
        pass_num, in_pass, datapoint = self._read(index)
        arrays = check_datapoint_at(pass_num, in_pass, datapoint, self.input_signature, source=self.name)
        self.position += size
        self.last_fed = index
        return {feed_name(spec.name, 0): arr for spec, arr in zip(self.input_signature, arrays)}

    def _read(self, index: int) -> tuple[int, int, Any]:
        """``(pass, index in the pass, datapoint)`` of stream datapoint ``index``."""
        if self._stream is None or index < self._stream_next:
            # start over (a rollback went back, or first use); a list or tuple skips in O(1)
            self._stream = numbered_passes(self.dataflow, f"{self.name}'s dataflow", skip=index)
            self._stream_next = index
        while True:
            item = next(self._stream)
            self._stream_next += 1
            if self._stream_next - 1 == index:
                return item

    def close(self) -> None:
        self._stream = None
        super().close()
