"""FeedInput: batches from a dataflow, passed into the step at each hooked run."""
from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import tensorflow as tf

from trainstack.loop import Callback, RunArgs, RunContext
from trainstack.loop.checks import check_bool

from .base import InputSource, feed_name
from .dataflow import close_workers, dataflow_size, numbered_passes, reset_dataflow
from .host_tensor import as_host_tensor
from .signature import DatapointCheck

__all__ = ["FeedInput"]


class FeedInput(InputSource):
    """Feeds one datapoint of ``dataflow`` per tower into each hooked run of the step.

    The simplest source: the host reads, checks and converts each batch (to a
    host tensor of its own, so the dataflow may reuse its arrays). With
    ``prefetch`` (the default), a trainer does that for the next step while
    the current one computes, except across an epoch's end, so that epoch
    callbacks still act on the batches of the next epoch; an error reading a
    batch is raised by the step that needs it. Every tower gets its own
    datapoint (feeds ``tower<k>/<input name>``). Only the hooked run takes
    feeds, so the step must run through ``trainer.hooked_run`` (the default
    ``run_step`` does).
    """

    reads_in_tower_order = False  # each tower has its own feeds

    def __init__(self, dataflow: Any, prefetch: bool = True) -> None:
        super().__init__()
        self.dataflow = dataflow
        self.prefetch = check_bool(type(self).__name__, "prefetch", prefetch)
        self._iterator: Iterator[tuple[int, int, Any]] | None = None
        self._to_skip = 0
        #: per tower, (feed name, dtype) of each input; the check of one datapoint
        self._tower_feeds: list[list[tuple[str, tf.DType]]] = []
        self._check: DatapointCheck | None = None
        #: the next step's feeds, or the error reading them, when read ahead (:meth:`read_ahead`)
        self._ahead: dict[str, tf.Tensor] | Exception | None = None
        self._feeder = _FeedCallback(self)

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
        self._ahead = None
        self._tower_feeds = [[(feed_name(spec.name, k), spec.dtype) for spec in self.input_signature]
                             for k in range(self.num_towers)]
        self._check = DatapointCheck(self.input_signature, source=self.name)

    def _skip(self, n: int) -> bool:
        self._to_skip = n
        return True

    def next_feeds(self) -> dict[str, tf.Tensor]:
        """The feeds of the next hooked run: one checked datapoint per tower, as host tensors
        (those read ahead by :meth:`read_ahead`, if it ran since the last call)."""
        ahead, self._ahead = self._ahead, None
        if isinstance(ahead, Exception):
            raise ahead
        return ahead if ahead is not None else self._read_feeds()

    def read_ahead(self) -> None:
        """Read, check and convert the next hooked run's feeds now, e.g. while a step computes;
        the next :meth:`next_feeds` returns them, or raises the error reading them raised."""
        if self._ahead is None:
            try:
                self._ahead = self._read_feeds()
            except Exception as e:  # noqa: BLE001 - raised by the step that needs the batch
                self._ahead = e

    def _read_feeds(self) -> dict[str, tf.Tensor]:
        if self._iterator is None:
            self._reset_state()
        iterator, check = self._iterator, self._check
        feeds = {}
        for tower in self._tower_feeds:
            for (name, dtype), array in zip(tower, check(*next(iterator))):  # type: ignore[arg-type, misc]
                feeds[name] = as_host_tensor(array, dtype)
        return feeds

    def close(self) -> None:
        """Drop the iterator (and any batch read ahead) and stop the dataflow's worker processes
        (:func:`close_workers`); the next ``reset_state()`` starts them again."""
        self._iterator = None
        self._ahead = None
        close_workers(self.dataflow)

    def _get_callbacks(self) -> list[Callback]:
        return [self._feeder]

    def _prefetcher(self) -> Callable[[], None] | None:
        return self._feeder.read_ahead if self.prefetch else None


class _FeedCallback(Callback):
    """Gives each hooked run the next batch of a FeedInput; reads the next one ahead when the
    trainer asks during a step that is not its epoch's last; closes the input after training
    (ended or failed), so that the worker processes of its dataflow stop with training."""

    needs_every_step = True  # one batch per feed: a step function looping over steps would reuse it

    def __init__(self, source: FeedInput) -> None:
        self.source = source

    def _default_name(self) -> str:
        return f"Feed({self.source.name})"

    def _before_run(self, ctx: RunContext) -> RunArgs:
        return RunArgs(feeds=self.source.next_feeds())

    def read_ahead(self) -> None:
        """The source's :meth:`~FeedInput.read_ahead`, unless the step running is its epoch's last
        or a stop was requested: the next batch is then read when it is needed, after the
        epoch's callbacks (which may change the dataflow), or never."""
        loop = self.trainer.loop
        if loop.local_step + 1 < loop.steps_per_epoch and not loop.stop_requested:
            self.source.read_ahead()

    def _after_train(self) -> None:
        self.source.close()
