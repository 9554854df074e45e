"""Summaries: values recorded while a step is traced, and the callbacks that report them.

TF1 kept summaries and moving-average ops in graph collections. In TF2 a step
is a ``tf.function``; what it records at trace time goes into a
:class:`SummaryCollection`:

- :func:`add_moving_summary` keeps an exponential moving average (EMA) of a
  scalar in a non-trainable variable, updated inside the step (a stateful op
  in a ``tf.function`` runs on every call); :class:`MovingAverageSummary`
  reads the averages and puts them to ``trainer.monitors``.
- :func:`add_tensor_summary` keeps the last value of a tensor (or reads a
  variable directly); :func:`MergeAllSummaries` puts those values to the
  monitors. Nothing goes to the host until a callback reports.

Which collection records is chosen when the step is *traced*: the one made
current by :func:`summary_collection_scope` (per thread: the scope does not
leak into other threads), else the process-wide default. Higher layers (a
tower context) push their own collection while tracing, and push ``None`` to
discard the summaries of towers other than the main one. Callbacks read the
collection given to them, else ``trainer.summary_collection`` when the
trainer has one, else the default.

:class:`SimpleMovingAverage` needs no collection: it fetches named values
every step and averages them in Python.
"""
from __future__ import annotations

import contextlib
import contextvars
import re
import threading
import weakref
from collections import deque
from typing import Any, Callable, Iterator, Sequence

import numpy as np
import tensorflow as tf

from trainstack.loop import Callback, RunContext, RunValues

from .graph import _fetch_names, _is_variable, _to_numpy

__all__ = [
    "SummaryCollection", "get_summary_collection", "summary_collection_scope",
    "add_moving_summary", "add_tensor_summary",
    "MovingAverageSummary", "MergeAllSummaries", "SimpleMovingAverage",
]

#: Summary types of :func:`add_tensor_summary` -> suffix of the reported name.
SUMMARY_TYPES = {"scalar": "", "histogram": "-histogram", "mean": "-mean", "rms": "-rms",
                 "sparsity": "-sparsity"}

_TOWER_PREFIX = re.compile(r"^towerp?[0-9]+/")
_OUTPUT_INDEX = re.compile(r":[0-9]+$")
_BAD_VARIABLE_CHARS = re.compile(r"[^A-Za-z0-9_.\-/]")
_HISTOGRAM_BUCKETS = 30


# -- the collection ------------------------------------------------------------------------
class _Entry:
    """One named record; remembers the graphs (traces) that recorded it."""

    def __init__(self) -> None:
        self.graphs: "weakref.WeakSet[Any]" = weakref.WeakSet()


class _MovingAverage(_Entry):
    """A zero-debiased EMA (as TF1's ``assign_moving_average(zero_debias=True)``)."""

    def __init__(self, name: str, dtype: tf.DType, decay: float) -> None:
        super().__init__()
        self.decay = decay
        var_name = "EMA/" + _BAD_VARIABLE_CHARS.sub("_", name)
        self.biased = tf.Variable(tf.zeros([], dtype), trainable=False, name=var_name)
        self.count = tf.Variable(0, dtype=tf.int64, trainable=False, name=var_name + "/count")

    def update(self, x: tf.Tensor) -> tf.Tensor:
        x = tf.cast(x, self.biased.dtype)
        biased = self.biased.assign(self.decay * self.biased + (1.0 - self.decay) * x)
        count = tf.cast(self.count.assign_add(1), self.biased.dtype)
        return biased / (1.0 - tf.pow(tf.constant(self.decay, self.biased.dtype), count))

    def read(self) -> float | None:
        n = int(self.count.numpy())
        if n == 0:
            return None
        return float(self.biased.numpy()) / (1.0 - self.decay ** n)


class _LastValue(_Entry):
    """The last value a step recorded, kept on the device in a variable."""

    def __init__(self, name: str, kind: str, value: tf.Tensor) -> None:
        super().__init__()
        self.kind = kind
        var_name = "summary/" + _BAD_VARIABLE_CHARS.sub("_", name)
        # a scalar, or a histogram's fixed-size statistics: the shape never changes (XLA-friendly)
        self.holder = tf.Variable(tf.zeros(value.shape, value.dtype), trainable=False, name=var_name)
        self.count = tf.Variable(0, dtype=tf.int64, trainable=False, name=var_name + "/count")

    def update(self, value: tf.Tensor) -> None:
        self.holder.assign(value)
        self.count.assign_add(1)

    def read(self) -> np.ndarray | None:
        if int(self.count.numpy()) == 0:
            return None
        return self.holder.numpy()


class _VariableValue(_Entry):
    """A summary of a variable: read (and reduced) when reported, nothing done per step."""

    def __init__(self, kind: str, variable: Any, reduce: Callable[[Any], tf.Tensor]) -> None:
        super().__init__()
        self.kind = kind
        self.variable = variable
        self.reduce = reduce

    def read(self) -> np.ndarray:
        return np.asarray(self.reduce(self.variable))


class SummaryCollection:
    """The summaries one model records while its step is traced.

    Entries are keyed by name. A name is recorded at most once per trace
    (recording it twice in one trace is an error); a retrace, or another step
    function, recording the same name updates the same entry. Variables are
    created eagerly (``tf.init_scope``) the first time a name is recorded.
    Safe to record into from several threads.
    """

    def __init__(self, name: str = "summaries") -> None:
        self.name = name
        self._lock = threading.Lock()
        self._entries: dict[str, _Entry] = {}

    def __repr__(self) -> str:
        return f"SummaryCollection({self.name!r}, {len(self._entries)} entries)"

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def moving_average_names(self) -> list[str]:
        """Names of the moving averages (what :class:`MovingAverageSummary` reports)."""
        return [n for n, e in self._snapshot() if isinstance(e, _MovingAverage)]

    @property
    def summary_names(self) -> list[str]:
        """Names of the recorded summaries (what :func:`MergeAllSummaries` reports)."""
        return [n for n, e in self._snapshot() if not isinstance(e, _MovingAverage)]

    def add_moving_average(self, tensor: Any, name: str, decay: float = 0.95) -> tf.Tensor:
        """Update the EMA ``name`` with scalar ``tensor``; return the new (debiased) average."""
        if not 0.0 <= decay < 1.0:
            raise ValueError(f"moving average {name!r}: decay must be in [0, 1), got {decay!r}")
        tensor = _as_tensor(tensor, name)
        if tensor.shape.rank != 0:
            raise ValueError(f"add_moving_summary() takes scalars; {name!r} has shape {tensor.shape}")
        if not (tensor.dtype.is_floating or tensor.dtype.is_integer or tensor.dtype.is_bool):
            raise TypeError(f"add_moving_summary(): {name!r} has dtype {tensor.dtype.name}; "
                            "expected a number")
        dtype = tf.float64 if tensor.dtype == tf.float64 else tf.float32
        entry = self._entry(name, _MovingAverage, lambda: _MovingAverage(name, dtype, float(decay)))
        if entry.decay != float(decay):
            raise ValueError(f"moving average {name!r} was recorded with decay {entry.decay}, "
                             f"now with decay {decay}; use one decay per name")
        return entry.update(tensor)

    def add_summary(self, tensor: Any, name: str, summary_type: str = "scalar") -> None:
        """Keep a summary of ``tensor``, reported as ``name`` + the type's suffix.

        ``summary_type`` is one of :data:`SUMMARY_TYPES` (see
        :func:`add_tensor_summary`). The value is computed in the step and
        kept on the device; a histogram is kept as fixed-size statistics. A
        ``tf.Variable`` (or Keras variable) is not copied: it is read, and
        reduced, only when reported.
        """
        if summary_type not in SUMMARY_TYPES:
            raise ValueError(f"summary {name!r}: unknown type {summary_type!r}; expected one of "
                             f"{list(SUMMARY_TYPES)}")
        key = name + SUMMARY_TYPES[summary_type]
        kind = "histogram" if summary_type == "histogram" else "scalar"
        reduce = _REDUCTIONS[summary_type]
        variable = _is_variable(tensor)
        if not variable:
            tensor = _as_tensor(tensor, key)
        if summary_type == "scalar" and tensor.shape.rank != 0:
            raise ValueError(f"scalar summary {key!r} needs a 0-d value, got shape {tensor.shape}; "
                             "use 'histogram', 'mean', 'rms' or 'sparsity' for tensors")
        if variable:
            entry = self._entry(key, _VariableValue, lambda: _VariableValue(kind, tensor, reduce))
            if entry.variable is not tensor:
                raise ValueError(f"summary {key!r} was recorded from another variable before")
        else:
            value = reduce(tensor)
            entry = self._entry(key, _LastValue, lambda: _LastValue(key, kind, value))
            if value.dtype != entry.holder.dtype:
                raise ValueError(f"summary {key!r} was recorded as {entry.holder.dtype.name}, now as "
                                 f"{value.dtype.name}; record one dtype per name")
            entry.update(value)

    def moving_average_values(self) -> dict[str, float]:
        """The current (debiased) moving averages, for names updated at least once."""
        values = {}
        for name, entry in self._snapshot():
            if isinstance(entry, _MovingAverage):
                value = entry.read()
                if value is not None:
                    values[name] = value
        return values

    def summary_values(self) -> list[tuple[str, str, np.ndarray]]:
        """``(name, kind, value)`` of each recorded summary that has a value yet; ``kind`` is
        ``"scalar"``, or ``"histogram"`` with the statistics that :func:`_histogram` turns
        into a TensorBoard histogram."""
        values = []
        for name, entry in self._snapshot():
            if isinstance(entry, (_LastValue, _VariableValue)):
                value = entry.read()
                if value is not None:
                    values.append((name, entry.kind, value))
        return values

    def clear(self) -> None:
        """Forget every entry. Steps traced before keep updating their old variables:
        retrace them (or make a new collection) for a fresh start."""
        with self._lock:
            self._entries.clear()

    def _snapshot(self) -> list[tuple[str, _Entry]]:
        with self._lock:
            return list(self._entries.items())

    def _entry(self, name: str, cls: Any, make: Callable[[], _Entry]) -> Any:
        graph = None if tf.executing_eagerly() else tf.compat.v1.get_default_graph()
        with self._lock:
            entry = self._entries.get(name)
            if entry is None:
                with tf.init_scope():  # eager variables, whichever trace creates them
                    entry = make()
                self._entries[name] = entry
            elif not isinstance(entry, cls):
                what = {_MovingAverage: "a moving average", _LastValue: "a summary of a tensor",
                        _VariableValue: "a summary of a variable"}[type(entry)]
                raise ValueError(f"{name!r} is already {what} in {self!r}; give it another name")
            if graph is not None:
                if graph in entry.graphs:
                    raise ValueError(
                        f"{name!r} was recorded twice while tracing {graph.name!r}; pass distinct "
                        "name= to each (when several towers trace the same code, record only in "
                        "the main tower: the others trace under summary_collection_scope(None))")
                entry.graphs.add(graph)
        return entry


# -- which collection records ----------------------------------------------------------------
_DEFAULT = SummaryCollection("default")
_UNSET = object()
_CURRENT: contextvars.ContextVar[Any] = contextvars.ContextVar(
    "trainstack_summary_collection", default=_UNSET)


def get_summary_collection() -> SummaryCollection | None:
    """The collection that records now: the innermost scope's (None: discard), else the default."""
    current = _CURRENT.get()
    return _DEFAULT if current is _UNSET else current


@contextlib.contextmanager
def summary_collection_scope(collection: SummaryCollection | None) -> Iterator[SummaryCollection | None]:
    """Make ``collection`` record what is traced inside the block, in this thread.

    ``None`` discards: summary calls then record nothing (what non-main
    towers use). Scopes nest; a new thread starts with the default.
    """
    if collection is not None and not isinstance(collection, SummaryCollection):
        raise TypeError(f"summary_collection_scope expects a SummaryCollection or None, got "
                        f"{collection!r} ({type(collection).__name__})")
    token = _CURRENT.set(collection)
    try:
        yield collection
    finally:
        _CURRENT.reset(token)


def _check_collection(owner: str, arg: str, collection: Any) -> SummaryCollection | None:
    if collection is not None and not isinstance(collection, SummaryCollection):
        raise TypeError(f"{owner}({arg}=...) must be a SummaryCollection or None, got {collection!r}"
                        "; TF2 has no graph collections named by strings")
    return collection


def _target(collection: Any, func: str) -> SummaryCollection | None:
    """Where ``func`` records: ``collection`` if given, else the current one (None: discard)."""
    collection = _check_collection(func, "collection", collection)
    return get_summary_collection() if collection is None else collection


# -- recording ---------------------------------------------------------------------------------
@tf.autograph.experimental.do_not_convert
def add_moving_summary(*tensors: Any, decay: float = 0.95, collection: SummaryCollection | None = None,
                       summary_collections: None = None,
                       name: str | Sequence[str] | None = None) -> list[tf.Tensor]:
    """Keep a moving average of each scalar tensor; :class:`MovingAverageSummary` reports them.

    Call it inside the step function: the average is updated in the step's
    graph every time the step runs. Names come from ``name`` (a string for
    one tensor, a sequence for several), else from the tensor's name (inside
    a ``tf.function`` that is an op name such as ``Mean``, so prefer
    ``name=`` or ``tf.identity(x, name="cost")``), without the ``:0``
    output index and the ``towerN/`` prefix.

    ``collection``: where to record (default: :func:`get_summary_collection`).
    ``summary_collections`` (TF1 graph collections of summary ops) has no
    meaning in TF2 and must be None. Returns the updated averages (empty
    when the current scope discards summaries).
    """
    if summary_collections is not None:
        raise TypeError("add_moving_summary(summary_collections=...) named TF1 graph collections; "
                        "TF2 has none. The averages are reported by MovingAverageSummary; use "
                        "collection= (a SummaryCollection) to record them elsewhere")
    names = _names_for(tensors, name, "add_moving_summary")
    target = _target(collection, "add_moving_summary")
    if target is None:
        return []
    return [target.add_moving_average(t, n, decay) for t, n in zip(tensors, names)]


@tf.autograph.experimental.do_not_convert
def add_tensor_summary(x: Any, types: str | Sequence[str], name: str | None = None,
                       collection: SummaryCollection | None = None) -> None:
    """Record summaries of ``x`` for :func:`MergeAllSummaries`.

    ``types``: any of ``scalar`` (``x`` itself, a scalar), ``histogram``,
    ``mean``, ``rms``, ``sparsity`` (fraction of zeros); they are reported
    as ``name``, ``name-histogram``, ``name-mean``, ... (as in tensorpack).
    Inside a step, the values are computed with the step and kept on the
    device in variables (a histogram as 35 numbers: range, count, sums and
    30 equal-width buckets), so only reporting moves data to the host. A
    variable is not copied at all: it is read when reported, so this may
    also be called outside the step.
    """
    if isinstance(types, str):
        types = [types]
    unknown = [t for t in types if t not in SUMMARY_TYPES]
    if unknown or not types:
        raise ValueError(f"add_tensor_summary(types=...): unknown {unknown or 'empty types'}; "
                         f"expected some of {list(SUMMARY_TYPES)}")
    base = _names_for((x,), name, "add_tensor_summary")[0]
    target = _target(collection, "add_tensor_summary")
    if target is None:
        return
    for typ in dict.fromkeys(types):
        target.add_summary(x, base, typ)


def _rms(x: Any) -> tf.Tensor:
    x = tf.cast(x, tf.float32)
    return tf.sqrt(tf.reduce_mean(tf.square(x)))


def _histogram_stats(x: Any) -> tf.Tensor:
    """A fixed-size summary of the finite values of ``x``, computed where ``x`` lives:
    ``[min, max, count, sum, sum of squares, bucket counts...]`` (equal-width buckets)."""
    x = tf.reshape(tf.cast(x, tf.float32), [-1])
    finite = tf.math.is_finite(x)
    weights = tf.cast(finite, tf.float32)
    num = tf.reduce_sum(weights)
    lo = tf.where(num > 0, tf.reduce_min(tf.where(finite, x, np.inf)), 0.0)
    hi = tf.where(num > 0, tf.reduce_max(tf.where(finite, x, -np.inf)), 0.0)
    # buckets span [min, max]; a single value gets [v - 0.5, v + 0.5] (as TensorBoard)
    same = hi <= lo
    left, right = tf.where(same, lo - 0.5, lo), tf.where(same, hi + 0.5, hi)
    x = tf.where(finite, x, left)  # non-finite values have weight 0
    index = tf.cast(tf.floor((x - left) / (right - left) * _HISTOGRAM_BUCKETS), tf.int32)
    index = tf.clip_by_value(index, 0, _HISTOGRAM_BUCKETS - 1)
    counts = tf.math.unsorted_segment_sum(weights, index, _HISTOGRAM_BUCKETS)
    x = x * weights
    head = tf.stack([lo, hi, num, tf.reduce_sum(x), tf.reduce_sum(tf.square(x))])
    return tf.concat([head, counts], axis=0)


def _histogram(stats: np.ndarray) -> tf.compat.v1.HistogramProto:
    """The TensorBoard histogram of statistics made by :func:`_histogram_stats`."""
    lo, hi, num, total, squares = (float(v) for v in stats[:5])
    if num == 0:
        return tf.compat.v1.HistogramProto()
    left, right = (lo - 0.5, hi + 0.5) if hi <= lo else (lo, hi)  # as in _histogram_stats
    edges = np.linspace(left, right, _HISTOGRAM_BUCKETS + 1)
    return tf.compat.v1.HistogramProto(min=lo, max=hi, num=num, sum=total, sum_squares=squares,
                                       bucket_limit=edges[1:].tolist(),
                                       bucket=[float(c) for c in stats[5:]])


_REDUCTIONS: dict[str, Callable[[Any], tf.Tensor]] = {
    "scalar": tf.identity,
    "histogram": _histogram_stats,
    "mean": lambda x: tf.reduce_mean(tf.cast(x, tf.float32)),
    "rms": _rms,
    "sparsity": tf.math.zero_fraction,
}


def _names_for(tensors: Sequence[Any], name: Any, func: str) -> list[str]:
    if not tensors:
        raise ValueError(f"{func}() got no tensors")
    if name is None:
        return [_tensor_name(t, func) for t in tensors]
    names = [name] if isinstance(name, str) else list(name)
    if len(names) != len(tensors) or not all(isinstance(n, str) and n for n in names):
        raise ValueError(f"{func}(name=...) must give one non-empty name per tensor "
                         f"({len(tensors)} tensors), got {name!r}")
    return names


def _tensor_name(t: Any, func: str) -> str:
    if _is_variable(t) and not isinstance(t, tf.Variable):
        raw = getattr(t, "path", None) or getattr(t, "name", None)  # a Keras variable
    else:
        try:
            raw = t.name
        except (AttributeError, ValueError):  # eager tensors, Python numbers
            raw = None
    if not raw:
        raise ValueError(f"{func}(): {type(t).__name__} {t!r:.60} has no name (eager tensors and "
                         "Python numbers have none); pass name=")
    return _TOWER_PREFIX.sub("", _OUTPUT_INDEX.sub("", raw))


def _as_tensor(x: Any, name: str) -> tf.Tensor:
    try:
        return tf.convert_to_tensor(x)
    except (TypeError, ValueError) as e:
        raise TypeError(f"summary {name!r}: expected a tensor, got {x!r:.60} "
                        f"({type(x).__name__})") from e


# -- callbacks ---------------------------------------------------------------------------------
def _collection_of(cb: Callback, collection: SummaryCollection | None) -> SummaryCollection:
    """The collection given to ``cb``, else the trainer's ``summary_collection``, else the default."""
    if collection is not None:
        return collection
    found = getattr(cb.trainer, "summary_collection", None)
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
        for name, value in self.collection.moving_average_values().items():
            self.trainer.monitors.put_scalar(name, value)


class _MergeAllSummaries(Callback):
    """Put the summaries of :func:`add_tensor_summary` to the monitors (see MergeAllSummaries)."""

    def __init__(self, period: int, collection: SummaryCollection | None) -> None:
        self._period = period
        self._requested = collection
        self.collection: SummaryCollection | None = None
        self.name = "MergeAllSummaries"

    def _setup_graph(self) -> None:
        self.collection = _collection_of(self, self._requested)

    def _period_hit(self) -> bool:
        return bool(self._period) and (self.local_step + 1) % self._period == 0

    def _report(self) -> None:
        histograms = []
        for name, kind, value in self.collection.summary_values():
            if kind == "scalar":
                self.trainer.monitors.put_scalar(name, value)
            else:
                histograms.append(tf.compat.v1.Summary.Value(tag=name, histo=_histogram(value)))
        if histograms:
            self.trainer.monitors.put_event(tf.compat.v1.Summary(value=histograms))


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

    - ``period``: besides once an epoch, report after every ``period``-th step
      of each epoch (``(local_step + 1) % period == 0``, as in tensorpack).
    - ``run_alone``: tensorpack evaluated the summaries in a separate run;
      in TF2 they come from the steps either way. False reports right after
      the epoch's last step; True reports in ``trigger()`` (after the epoch,
      or when a scheduler such as PeriodicTrigger triggers it).
    - ``key``: the :class:`SummaryCollection` (default: the trainer's
      ``summary_collection``, else the process-wide default).
    """
    if isinstance(period, bool) or not isinstance(period, int) or period < 0:
        raise ValueError(f"MergeAllSummaries(period=...) must be a non-negative int, got {period!r}")
    key = _check_collection("MergeAllSummaries", "key", key)
    cls = _MergeSummariesAlone if run_alone else _MergeSummariesWithStep
    return cls(period, key)


class SimpleMovingAverage(Callback):
    """Average named scalars over the last ``window_size`` steps, in Python.

    The values are fetched with every step; at each trigger (after each
    epoch by default) the average is put to the monitors as
    ``<prefix><name>/SMA``.
    """

    def __init__(self, tensors: str | Sequence[str], window_size: int, prefix: str = "") -> None:
        self._names = _fetch_names("SimpleMovingAverage", tensors)
        if isinstance(window_size, bool) or not isinstance(window_size, int) or window_size <= 0:
            raise ValueError(f"SimpleMovingAverage(window_size=...) must be a positive int, "
                             f"got {window_size!r}")
        if not isinstance(prefix, str):
            raise TypeError(f"SimpleMovingAverage(prefix=...) must be a str, got {prefix!r}")
        self._prefix = prefix
        self._window: deque[list[float]] = deque(maxlen=window_size)

    def _before_run(self, ctx: RunContext) -> list[str]:
        return self._names

    def _after_run(self, run_context: RunContext, run_values: RunValues) -> None:
        values = []
        for name, value in zip(self._names, run_values.results):
            value = _to_numpy(value)
            if value.ndim != 0:
                raise ValueError(f"SimpleMovingAverage averages scalars; {name!r} has shape "
                                 f"{value.shape}")
            values.append(float(value))
        self._window.append(values)

    def _trigger(self) -> None:
        if not self._window:
            return
        for name, avg in zip(self._names, np.mean(self._window, axis=0)):
            self.trainer.monitors.put_scalar(f"{self._prefix}{name}/SMA", float(avg))
