"""FeedInput: NumPy batches from a dataflow, passed into the step at each hooked run."""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import tensorflow as tf

from trainstack.loop import Callback, RunArgs, RunContext

from .base import InputSource, feed_name
from .dataflow import close_workers, dataflow_size, numbered_passes, reset_dataflow
from .signature import check_datapoint_at

__all__ = ["FeedInput"]


class FeedInput(InputSource):
    """Feeds one datapoint of ``dataflow`` per tower into each hooked run of the step.

    The simplest source, and the slowest: the host reads, checks and converts
    each batch between two steps while the device waits (about 0.92x
    TFDatasetInput on a small MLP, see benchmarks/README.md). Every tower gets
    its own datapoint (feeds ``tower<k>/<input name>``). Only the hooked run
    takes feeds, so the step must run through ``trainer.hooked_run`` (the
    default ``run_step`` does).
    """

    def __init__(self, dataflow: Any) -> None:
        super().__init__()
        self.dataflow = dataflow
        self._iterator: Iterator[tuple[int, int, Any]] | None = None
        self._to_skip = 0

    def _size(self) -> int:
        return dataflow_size(self.dataflow, f"{self.name}'s dataflow")

    def _feed_signature(self) -> Mapping[str, tf.TensorSpec]:
        return {feed_name(spec.name, k): spec
                for k in range(self.num_towers) for spec in self.input_signature}

    def _get_input_tensors(self, tower_index: int) -> list[tf.Tensor]:
        feeds = self._traced_feeds()
        return [feeds[feed_name(spec.name, tower_index)] for spec in self.input_signature]

    def _reset_state(self) -> None:
        reset_dataflow(self.dataflow)
        self._iterator = numbered_passes(self.dataflow, f"{self.name}'s dataflow", skip=self._to_skip)
        self._to_skip = 0

    def _skip(self, n: int) -> bool:
        self._to_skip = n
        return True

    def next_feeds(self) -> dict[str, Any]:
        """The feeds of the next hooked run: one checked datapoint per tower."""
        if self._iterator is None:
            self._reset_state()
        feeds = {}
        for k in range(self.num_towers):
            arrays = check_datapoint_at(*next(self._iterator), self.input_signature, source=self.name)  # type: ignore[arg-type]
            for spec, arr in zip(self.input_signature, arrays):
                feeds[feed_name(spec.name, k)] = arr
        return feeds

    def close(self) -> None:
        """Drop the iterator and stop the dataflow's worker processes (:func:`close_workers`);
        the next ``reset_state()`` starts them again."""
        self._iterator = None
        close_workers(self.dataflow)

    def _get_callbacks(self) -> list[Callback]:
        return [_FeedCallback(self)]


class _FeedCallback(Callback):
    """Gives each hooked run the next batch of a FeedInput; closes it after training (ended or
    failed), so that the worker processes of its dataflow stop with training."""

    needs_every_step = True  # one batch per feed: a step function looping over steps would reuse it

    def __init__(self, source: FeedInput) -> None:
        self.source = source

    def _default_name(self) -> str:
        return f"Feed({self.source.name})"

    def _before_run(self, ctx: RunContext) -> RunArgs:
        return RunArgs(feeds=self.source.next_feeds())

    def _after_train(self) -> None:
        self.source.close()
