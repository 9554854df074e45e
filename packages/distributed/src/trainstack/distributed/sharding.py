"""shard_dataflow: give each of ``size`` processes its own, disjoint part of a dataflow.

In data-parallel training (Horovod, multi-worker) every process runs the same
script and reads its own input; without sharding each would read the same
datapoints. The shard of rank ``r`` holds datapoints ``r, r + size, r + 2*size,
...`` of each pass, and every shard has the same length (``len(df) // size``;
the last ``len(df) % size`` datapoints of a pass are dropped), because all
processes must run the same number of steps per epoch.
"""
from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

from trainstack.inputs import dataflow_size, reset_dataflow
from trainstack.loop.checks import check_int

__all__ = ["ShardedDataFlow", "shard_dataflow"]


class ShardedDataFlow:
    """Rank ``rank``'s shard of ``dataflow`` among ``size`` processes; see the module docstring."""

    def __init__(self, dataflow: Any, rank: int, size: int) -> None:
        size = check_int("shard_dataflow", "size", size, minimum=1)
        rank = check_int("shard_dataflow", "rank", rank, minimum=0, maximum=size - 1,
                         note=f"one of the {size} processes")
        self.dataflow, self.rank, self.size = dataflow, rank, size

    def __len__(self) -> int:
        n = dataflow_size(self.dataflow) // self.size
        if n == 0:
            raise ValueError(f"the dataflow has {dataflow_size(self.dataflow)} datapoints, fewer than the "
                             f"{self.size} processes sharing it: some shards would be empty")
        return n

    def reset_state(self) -> None:
        reset_dataflow(self.dataflow)

    def __iter__(self) -> Iterator[Any]:
        # the first len(self) * size datapoints, every size-th from rank
        return itertools.islice(iter(self.dataflow), self.rank, len(self) * self.size, self.size)

    def __repr__(self) -> str:
        return f"ShardedDataFlow({self.dataflow!r}, rank={self.rank}, size={self.size})"


def shard_dataflow(dataflow: Any, rank: int, size: int) -> ShardedDataFlow:
    """Rank ``rank``'s shard of ``dataflow`` among ``size`` processes (e.g. ``hvd.rank(), hvd.size()``)."""
    return ShardedDataFlow(dataflow, rank, size)
