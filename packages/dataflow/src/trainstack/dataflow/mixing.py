"""Dataflows that interleave the datapoints of several dataflows at random:
:class:`RandomChooseData` (draw a dataflow for each datapoint, with probabilities) and
:class:`RandomMixData` (a random interleaving of whole passes). tensorpack 0.11's; with the
same seed they draw the same sequence as tensorpack's (``tests/parity/test_parity_extras.py``).
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from .base import RNGDataFlow, len_of
from .protocol import reset_dataflow

__all__ = ["RandomChooseData", "RandomMixData"]


class RandomChooseData(RNGDataFlow):
    """For each datapoint, one of ``df_lists`` drawn at random (uniformly, or with the
    probabilities of ``(dataflow, probability)`` pairs, which must sum to 1) gives its next
    datapoint; a pass stops as soon as the drawn dataflow is exhausted. No ``len``."""

    def __init__(self, df_lists: Sequence[Any]) -> None:
        super().__init__()
        if not df_lists:
            raise ValueError("RandomChooseData needs at least one dataflow")
        if isinstance(df_lists[0], (tuple, list)):
            if not all(isinstance(v, (tuple, list)) and len(v) == 2 for v in df_lists):
                raise ValueError("RandomChooseData: give either dataflows or (dataflow, probability) pairs, "
                                 "not a mix")
            total = sum(float(v[1]) for v in df_lists)
            if not np.isclose(total, 1.0):
                raise ValueError(f"RandomChooseData: the probabilities {[v[1] for v in df_lists]} sum to "
                                 f"{total}, not 1")
            self.df_lists = [(v[0], float(v[1])) for v in df_lists]
        else:
            prob = 1.0 / len(df_lists)
            self.df_lists = [(k, prob) for k in df_lists]

    def reset_state(self) -> None:
        super().reset_state()
        for ds, _ in self.df_lists:
            reset_dataflow(ds)

    def __iter__(self) -> Iterator[Any]:
        rng = self._require_rng()
        itrs = [iter(ds) for ds, _ in self.df_lists]
        probs = np.array([p for _, p in self.df_lists])
        while True:
            k = rng.choice(len(itrs), p=probs)  # the draws of tensorpack's rng.choice(itrs, p=probs)
            try:
                dp = next(itrs[k])
            except StopIteration:
                return
            yield dp


class RandomMixData(RNGDataFlow):
    """One pass of each of ``df_lists``, interleaved in a random order: every datapoint of
    every dataflow exactly once, the order within each dataflow kept; ``len`` is the sum of
    their sizes (all must have one). A dataflow that yields fewer datapoints than its ``len``
    is an error."""

    def __init__(self, df_lists: Sequence[Any]) -> None:
        super().__init__()
        if not df_lists:
            raise ValueError("RandomMixData needs at least one dataflow")
        self.df_lists = list(df_lists)
        self.sizes = [len_of(k) for k in self.df_lists]

    def reset_state(self) -> None:
        super().reset_state()
        for ds in self.df_lists:
            reset_dataflow(ds)

    def __len__(self) -> int:
        return sum(self.sizes)

    def __iter__(self) -> Iterator[Any]:
        sums = np.cumsum(self.sizes)
        idxs = np.arange(len(self))
        self._require_rng().shuffle(idxs)
        sources = np.searchsorted(sums, idxs, "right")
        itrs = [iter(k) for k in self.df_lists]
        for k in sources:
            try:
                dp = next(itrs[k])
            except StopIteration:
                raise ValueError(f"RandomMixData: dataflow {k} ({type(self.df_lists[k]).__name__}) yielded "
                                 f"fewer datapoints than its len(), {self.sizes[k]}") from None
            yield dp
