"""The callbacks that report summaries: MovingAverageSummary, MergeAllSummaries, SimpleMovingAverage.

:class:`MovingAverageSummary` puts the moving averages of :func:`add_moving_summary`
to ``trainer.monitors``, :func:`MergeAllSummaries` the values of :func:`add_tensor_summary`
and the summaries fetched from the steps it writes after (``tf.summary.*`` in a tower)
(see :mod:`~trainstack.callbacks.summary` for the collection they read). A callback reads
the collection given to it, else ``trainer.summary_collection`` when the trainer has one,
else the process-wide default.

:class:`SimpleMovingAverage` needs no collection: it fetches named values
every step and averages them in Python.
"""
from __future__ import annotations

import logging
from collections import deque
from collections.abc import Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from trainstack.loop import Callback, RunContext, RunValues
from trainstack.loop.checks import check_int

from .callback_state import NumbersState
from .graph import _fetch_names
from .summary import _DEFAULT, SummaryCollection, _check_collection
from .trainer_protocol import declares
from .variables import to_numpy

__all__ = ["MovingAverageSummary", "MergeAllSummaries", "SimpleMovingAverage"]

logger = logging.getLogger("trainstack.callbacks")


# -- which collection a callback reads ---------------------------------------------------------
def _collection_of(cb: Callback, collection: SummaryCollection | None) -> SummaryCollection:
    """The collection given to ``cb``, else the trainer's ``summary_collection``, else the default."""
    if collection is not None:
        return collection
    found = cb.trainer.summary_collection if declares(cb.trainer, "summary_collection") else None
    if found is None:
        return _DEFAULT
    if not isinstance(found, SummaryCollection):
        raise TypeError(f"{cb.name}: trainer.summary_collection must be a SummaryCollection, got "
                        f"{found!r} ({type(found).__name__})")
    return found


class MovingAverageSummary(Callback):
    """Put the moving averages of :func:`add_moving_summary` to the monitors at each trigger.

    In tensorpack this callback ran the EMA-update ops with every step; in
    TF2 the updates are ops of the step's graph and run with it, so this
    callback only reads the averages (under their names) when triggered,
    after each epoch by default.

    ``collection``: the :class:`SummaryCollection` to read (default: the
    trainer's ``summary_collection``, else the process-wide default).
    ``train_op`` (tensorpack: the op to attach the updates to) must be None.

    The averages' variables are checkpointed by :class:`ModelSaver` (see
    :mod:`~trainstack.callbacks.callback_state`), as tensorpack's were: a resumed run
    reports the averages of the uninterrupted run.

    A step that a trainer skips for a NaN or Inf (``skip_nonfinite_steps=True`` in the
    towers layer) leaves the averages as they were: the trainer updates them at the end of
    the step, only when it is not skipped, so the smoothed cost stays finite.
    """

    def __init__(self, collection: SummaryCollection | None = None, train_op: None = None) -> None:
        self._requested = _check_collection("MovingAverageSummary", "collection", collection)
        if train_op is not None:
            raise ValueError("MovingAverageSummary(train_op=...) has no meaning in TF2: the averages "
                             "are updated inside the step that called add_moving_summary()")
        self.collection: SummaryCollection | None = None

    def _setup_graph(self) -> None:
        self.collection = _collection_of(self, self._requested)

    def _trigger(self) -> None:
        assert self.collection is not None and self.trainer.monitors is not None
        for name, value in self.collection.moving_average_values().items():
            self.trainer.monitors.put_scalar(name, value)

    def checkpoint_state(self) -> tf.Module:
        """The variables of the averages (see callback_state)."""
        assert self.collection is not None
        return self.collection.moving_average_state()

    def load_checkpoint_state(self) -> None:
        """Nothing to do: the averages live in the variables restored."""


class _MergeAllSummaries(Callback):
    """Put the summaries of :func:`add_tensor_summary`, and the fetched ones (``tf.summary.*`` in
    a tower), to the monitors (see MergeAllSummaries)."""

    def __init__(self, period: int, collection: SummaryCollection | None) -> None:
        self._period = period
        self._requested = collection
        self.collection: SummaryCollection | None = None
        self.name = "MergeAllSummaries"
        #: fetched summaries: (name, kind, fetch) asked of the step, and (name, kind, value) got
        self._asked: list[tuple[str, str, str]] = []
        self._fetched: list[tuple[str, str, Any]] = []
        self._fetched_in: tuple[int, int] | None = None
        self._hooked: bool | None = None  # whether the group calls before_run (asked once)
        self._warned = False

    def overrides(self, hook: str) -> bool:
        if hook in ("before_run", "after_run"):
            # Only when this trainer's collection holds fetched summaries: a trainer whose steps
            # compute none skips the hooked-run protocol. The loop's group asks again after
            # setup_graph, which found the collection (the trainer's own); before that, only a
            # collection given to the callback counts, never another trainer's.
            collection = self.collection if self.collection is not None else self._requested
            self._hooked = collection is not None and bool(collection.fetched_summaries())
            return self._hooked
        return super().overrides(hook)

    def _setup_graph(self) -> None:
        self.collection = _collection_of(self, self._requested)

    def _period_hit(self) -> bool:
        return bool(self._period) and (self.local_step + 1) % self._period == 0

    def _writes_after_this_step(self) -> bool:
        """Whether the summaries are written after the step now running: the epoch's last, or
        a ``period``-th one."""
        return self.local_step == self.trainer.steps_per_epoch - 1 or self._period_hit()

    def _before_run(self, ctx: RunContext) -> list[str] | None:
        # fetched summaries are computed by the steps that write them only; several hooked runs
        # may make one step (a GAN's): fetch in the first one
        where = (self.epoch_num, self.local_step)
        if where == self._fetched_in or not self._writes_after_this_step():
            return None
        assert self.collection is not None
        self._asked = self.collection.fetched_summaries()
        if not self._asked:
            return None
        self._fetched_in = where
        return [fetch for _, _, fetch in self._asked]

    def _after_run(self, run_context: RunContext, run_values: RunValues) -> None:
        if run_values.results is not None:
            self._fetched = [(name, kind, value)
                             for (name, kind, _), value in zip(self._asked, run_values.results)]

    def _report(self) -> None:
        monitors = self.trainer.monitors
        events = []
        assert self.collection is not None and monitors is not None
        for name, kind, value in self.collection.summary_values():
            if kind == "scalar":
                monitors.put_scalar(name, value)
            else:
                events.append(tf.compat.v1.Summary.Value(tag=name, histo=_histogram(value)))
        fetched, self._fetched = self._fetched, []  # each computed value is written once
        for name, kind, value in fetched:
            if kind == "scalar":
                monitors.put_scalar(name, value)
            elif kind == "image":
                monitors.put_image(name, value)
            elif kind == "histogram":
                events.append(tf.compat.v1.Summary.Value(tag=name, histo=_histogram(value)))
            else:
                events.append(_text(name, value))
        if events:
            monitors.put_event(tf.compat.v1.Summary(value=events))
        if self._hooked is False and not self._warned and self.collection.fetched_summaries():
            self._warned = True
            logger.warning("MergeAllSummaries: the step recorded summaries computed when fetched "
                           "(tf.summary.* in a tower) after the callbacks were set up, so they are "
                           "never fetched nor written. Trace the step before training (setup_graph).")


class _MergeSummariesWithStep(_MergeAllSummaries):
    """Report after the epoch's last step, and after every ``period``-th step of an epoch."""

    def _trigger_step(self) -> None:
        if self.local_step == self.trainer.steps_per_epoch - 1 or self._period_hit():
            self._report()


class _MergeSummariesAlone(_MergeAllSummaries):
    """Report at each trigger (after each epoch by default), and every ``period`` steps."""

    def overrides(self, hook: str) -> bool:
        if hook == "trigger_step":
            return bool(self._period)
        return super().overrides(hook)

    def _trigger_step(self) -> None:
        if self._period_hit():
            self._report()

    def _trigger(self) -> None:
        self._report()


def MergeAllSummaries(period: int = 0, run_alone: bool = False,
                      key: SummaryCollection | None = None) -> Callback:
    """Put the summaries recorded by :func:`add_tensor_summary` to the monitors.

    Scalars go to ``put_scalar``; histograms, in one ``tf.compat.v1.Summary``,
    to ``put_event``. Values are the last ones recorded by the step (kept on
    the device in variables, so that only reporting moves data to the host).

    Summaries the step computes only when fetched (``tf.summary.scalar/image/histogram/text``
    in a tower, see ``trainstack.towers.tf1.summaries``) are fetched from the steps after
    which this callback writes (the epoch's last, and every ``period``-th), so the other
    steps do not compute them; scalars go to ``put_scalar`` (every monitor: TensorBoard,
    JSON, console), images to ``put_image``, histograms and text to ``put_event``.
    With ``run_alone``, ``trigger()`` writes those of the epoch's last step (a trigger at
    another time writes none that were not written yet).

    - ``period``: besides once an epoch, report after every ``period``-th step
      of each epoch (``(local_step + 1) % period == 0``, as in tensorpack).
    - ``run_alone``: tensorpack evaluated the summaries in a separate run;
      in TF2 they come from the steps either way. False reports right after
      the epoch's last step; True reports in ``trigger()`` (after the epoch,
      or when a scheduler such as PeriodicTrigger triggers it).
    - ``key``: the :class:`SummaryCollection` (default: the trainer's
      ``summary_collection``, else the process-wide default).
    """
    period = check_int("MergeAllSummaries", "period", period, minimum=0)
    key = _check_collection("MergeAllSummaries", "key", key)
    cls = _MergeSummariesAlone if run_alone else _MergeSummariesWithStep
    return cls(period, key)


class SimpleMovingAverage(Callback):
    """Average named scalars over the last ``window_size`` steps, in Python.

    The values are fetched with every step; at each trigger (after each
    epoch by default) the average is put to the monitors as
    ``<prefix><name>/SMA``. The window is checkpointed by :class:`ModelSaver` (see
    :mod:`~trainstack.callbacks.callback_state`): a resumed run averages what the
    uninterrupted run would.
    """

    def __init__(self, tensors: str | Sequence[str], window_size: int, prefix: str = "") -> None:
        self._names = _fetch_names("SimpleMovingAverage", tensors)
        window_size = check_int("SimpleMovingAverage", "window_size", window_size, minimum=1)
        if not isinstance(prefix, str):
            raise TypeError(f"SimpleMovingAverage(prefix=...) must be a str, got {prefix!r}")
        self._prefix = prefix
        self._window: deque[list[float]] = deque(maxlen=window_size)
        self._state: NumbersState | None = None

    def checkpoint_state(self) -> NumbersState:
        """The window's values, oldest first, row by row (see callback_state)."""
        if self._state is None:
            assert self._window.maxlen is not None  # window_size
            self._state = NumbersState("SimpleMovingAverage",
                                       window=self._window.maxlen * len(self._names))
        self._state.put("window", [v for row in self._window for v in row])
        return self._state

    def load_checkpoint_state(self) -> None:
        """Continue with the window of values fetched before the checkpoint."""
        assert self._state is not None
        flat, n = self._state.get("window"), len(self._names)
        self._window.clear()
        self._window.extend(flat[i:i + n] for i in range(0, len(flat) - n + 1, n))

    def _before_run(self, ctx: RunContext) -> list[str]:
        return self._names

    def _after_run(self, run_context: RunContext, run_values: RunValues) -> None:
        values = []
        for name, value in zip(self._names, run_values.results):
            value = to_numpy(value)
            if value.ndim != 0:
                raise ValueError(f"SimpleMovingAverage averages scalars; {name!r} has shape "
                                 f"{value.shape}")
            values.append(float(value))
        self._window.append(values)

    def _trigger(self) -> None:
        if not self._window:
            return
        assert self.trainer.monitors is not None
        for name, avg in zip(self._names, np.mean(self._window, axis=0)):
            self.trainer.monitors.put_scalar(f"{self._prefix}{name}/SMA", float(avg))


# -- histograms, as TensorBoard takes them -----------------------------------------------------
def _histogram(stats: np.ndarray) -> tf.compat.v1.HistogramProto:
    """The TensorBoard histogram of statistics made by :func:`histogram_stats` (any number of
    buckets: what follows the five leading statistics)."""
    lo, hi, num, total, squares = (float(v) for v in stats[:5])
    if num == 0:
        return tf.compat.v1.HistogramProto()
    left, right = (lo - 0.5, hi + 0.5) if hi <= lo else (lo, hi)  # as in histogram_stats
    edges = np.linspace(left, right, len(stats) - 5 + 1)
    return tf.compat.v1.HistogramProto(min=lo, max=hi, num=num, sum=total, sum_squares=squares,
                                       bucket_limit=edges[1:].tolist(),
                                       bucket=[float(c) for c in stats[5:]])


def _text(name: str, value: Any) -> tf.compat.v1.Summary.Value:
    """A summary value TensorBoard's text dashboard shows (a string tensor, any shape)."""
    metadata = tf.compat.v1.SummaryMetadata(
        plugin_data=tf.compat.v1.SummaryMetadata.PluginData(plugin_name="text"))
    return tf.compat.v1.Summary.Value(tag=name, metadata=metadata,
                                      tensor=tf.make_tensor_proto(np.asarray(value, dtype=object)))
