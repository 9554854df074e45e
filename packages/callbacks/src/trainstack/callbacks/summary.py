# About 470 lines: the collection and the in-graph ops that record into it are one concept (see below).
"""Summaries recorded while a step is traced: SummaryCollection, add_moving_summary, add_tensor_summary.

TF1 kept summaries and moving-average ops in graph collections. In TF2 a step
is a ``tf.function``; what it records at trace time goes into a
:class:`SummaryCollection`:

- :func:`add_moving_summary` keeps an exponential moving average (EMA) of a
  scalar in a non-trainable variable, updated inside the step (a stateful op
  in a ``tf.function`` runs on every call);
- :func:`add_tensor_summary` keeps the last value of a tensor (or reads a
  variable directly). Nothing goes to the host until a callback reports
  (the callbacks of :mod:`~trainstack.callbacks.summary_callbacks`);
- :meth:`SummaryCollection.add_fetched_summary` names a tensor of the step
  that is computed only on the steps that fetch it (``MergeAllSummaries``
  fetches it on the steps it writes): what ``tf.summary.*`` in a tower
  records (see ``trainstack.towers.tf1.summaries``).

Which collection records is chosen when the step is *traced*: the one made
current by :func:`summary_collection_scope` (per thread: the scope does not
leak into other threads), else the process-wide default
(:func:`default_summary_collection`). Higher layers choose for their steps: a
trainer with a collection of its own makes it record while it builds its
steps, and refuses to run a step that recorded into the default instead,
which its callbacks do not read (see the towers layer); ``None`` discards (the
inference towers use it).
"""
from __future__ import annotations

import contextlib
import contextvars
import re
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from .eager_state import eager_state
from .graph import _is_variable

__all__ = [
    "SummaryCollection", "get_summary_collection", "summary_collection_scope", "summary_collection_chosen",
    "default_summary_collection",
    "add_moving_summary", "add_tensor_summary", "histogram_stats",
]

#: Summary types of :func:`add_tensor_summary` -> suffix of the reported name.
SUMMARY_TYPES = {"scalar": "", "histogram": "-histogram", "mean": "-mean", "rms": "-rms",
                 "sparsity": "-sparsity"}

#: the scope of a tower (``tower1/``), under the name scope of a tf.distribute replica (``replica_1/``)
_TOWER_PREFIX = re.compile(r"^(replica_[0-9]+/)?towerp?[0-9]+/")
_OUTPUT_INDEX = re.compile(r":[0-9]+$")
_BAD_VARIABLE_CHARS = re.compile(r"[^A-Za-z0-9_.\-/]")
_HISTOGRAM_BUCKETS = 30


# -- the collection ------------------------------------------------------------------------
class _Entry:
    """One named record; remembers the graphs (traces) that recorded it."""

    def __init__(self) -> None:
        self.graphs: weakref.WeakSet[Any] = weakref.WeakSet()


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


class _Fetched(_Entry):
    """A summary the step computes only when it is fetched, by name (its ``kind``: one of
    :data:`FETCHED_KINDS`); nothing is kept between steps."""

    def __init__(self, kind: str, fetch: str) -> None:
        super().__init__()
        self.kind = kind
        self.fetch = fetch


#: What a fetched summary's value is: ``scalar`` (a 0-d number), ``histogram`` (the statistics of
#: :func:`histogram_stats`), ``image`` (NHWC uint8), ``text`` (a string tensor).
FETCHED_KINDS = ("scalar", "histogram", "image", "text")


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
    def names(self) -> list[str]:
        """Every recorded name, in the order first recorded."""
        return [n for n, _ in self._snapshot()]

    def names_recorded_in(self, graph: Any) -> list[str]:
        """The names recorded while tracing ``graph`` (a ``FuncGraph``) or a graph inside it
        (a nested ``tf.function``, a ``tf.while_loop``'s body)."""
        found = []
        for name, entry in self._snapshot():
            for recorded in list(entry.graphs):
                while recorded is not None and recorded is not graph:
                    recorded = getattr(recorded, "outer_graph", None)
                if recorded is not None:
                    found.append(name)
                    break
        return found

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
        tensor = self.moving_average_input(tensor, name, decay)
        dtype = tensor.dtype
        entry = self._entry(name, _MovingAverage, lambda: _MovingAverage(name, dtype, float(decay)))
        if entry.decay != float(decay):
            raise ValueError(f"moving average {name!r} was recorded with decay {entry.decay}, "
                             f"now with decay {decay}; use one decay per name")
        return entry.update(tensor)

    @staticmethod
    def moving_average_input(tensor: Any, name: str, decay: float = 0.95) -> tf.Tensor:
        """``tensor`` as the moving average ``name`` takes it: a float32 scalar (float64 stays
        float64); raises the error :meth:`add_moving_average` would for a tensor or a decay it
        cannot take (for recorders that gather values before averaging them)."""
        if not 0.0 <= decay < 1.0:
            raise ValueError(f"moving average {name!r}: decay must be in [0, 1), got {decay!r}")
        tensor = _as_tensor(tensor, name)
        if tensor.shape.rank != 0:
            raise ValueError(f"add_moving_summary() takes scalars; {name!r} has shape {tensor.shape}")
        if not (tensor.dtype.is_floating or tensor.dtype.is_integer or tensor.dtype.is_bool):
            raise TypeError(f"add_moving_summary(): {name!r} has dtype {tensor.dtype.name}; "
                            "expected a number")
        return tf.cast(tensor, tf.float64 if tensor.dtype == tf.float64 else tf.float32)

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

    def add_fetched_summary(self, name: str, kind: str, fetch: str) -> None:
        """Record that the step computes summary ``name`` as the tensor named ``fetch`` (in the
        main training tower, as callbacks fetch it), only on the steps that fetch it.

        ``kind`` is one of :data:`FETCHED_KINDS`. Nothing is computed or kept here:
        ``MergeAllSummaries`` fetches the tensor on the steps it writes, so that a step that
        does not write skips its computation (the graph prunes what nothing asks for).
        """
        if kind not in FETCHED_KINDS:
            raise ValueError(f"summary {name!r}: unknown kind {kind!r}; expected one of {FETCHED_KINDS}")
        if not isinstance(fetch, str) or not fetch:
            raise TypeError(f"summary {name!r}: fetch must be a tensor name, got {fetch!r}")
        entry = self._entry(name, _Fetched, lambda: _Fetched(kind, fetch))
        if entry.kind != kind:
            raise ValueError(f"summary {name!r} was recorded as {entry.kind}, now as {kind}; "
                             "give it another name")
        entry.fetch = fetch  # the latest trace's name (every trace builds the same one)

    def fetched_summaries(self) -> list[tuple[str, str, str]]:
        """``(name, kind, fetch)`` of each summary recorded by :meth:`add_fetched_summary`."""
        return [(n, e.kind, e.fetch) for n, e in self._snapshot() if isinstance(e, _Fetched)]

    def moving_average_values(self) -> dict[str, float]:
        """The current (debiased) moving averages, for names updated at least once."""
        values = {}
        for name, entry in self._snapshot():
            if isinstance(entry, _MovingAverage):
                value = entry.read()
                if value is not None:
                    values[name] = value
        return values

    def moving_average_state(self) -> tf.Module:
        """A ``tf.Module`` tracking the variables of each moving average, by name
        (``averages/<name>/biased`` and ``.../count``): what a checkpoint holds so that the
        averages of a resumed run continue where they were (see callback_state)."""
        module = tf.Module(name="moving_averages")
        module.averages = {name: {"biased": entry.biased, "count": entry.count}
                           for name, entry in self._snapshot() if isinstance(entry, _MovingAverage)}
        return module

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
                with eager_state():  # eager variables, whichever trace creates them
                    entry = make()
                self._entries[name] = entry
            elif not isinstance(entry, cls):
                what = {_MovingAverage: "a moving average", _LastValue: "a summary of a tensor",
                        _VariableValue: "a summary of a variable",
                        _Fetched: "a summary computed when fetched (tf.summary.*)"}[type(entry)]
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


def summary_collection_chosen() -> bool:
    """Whether a :func:`summary_collection_scope` chose the collection that records now, in this
    thread; False when the process-wide default records because nothing chose."""
    return _CURRENT.get() is not _UNSET


def default_summary_collection() -> SummaryCollection:
    """The process-wide default: it records where no scope chose a collection, and callbacks read
    it for a trainer without a ``summary_collection`` of its own (the bare loop's)."""
    return _DEFAULT


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
    output index and the ``towerN/`` prefix (also ``replica_N/towerN/``).

    ``collection``: where to record (default: :func:`get_summary_collection`).
    ``summary_collections`` (TF1 graph collections of summary ops) has no
    meaning in TF2 and must be None. Returns the updated averages (empty
    when the current scope discards summaries; in a step of several towers,
    where the trainer averages the towers' values before updating the
    average once, the values given).
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


def histogram_stats(x: Any, buckets: int = _HISTOGRAM_BUCKETS) -> tf.Tensor:
    """A fixed-size summary of the finite values of ``x``, computed where ``x`` lives:
    ``[min, max, count, sum, sum of squares, bucket counts...]`` (``buckets`` equal-width buckets)."""
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
    index = tf.cast(tf.floor((x - left) / (right - left) * buckets), tf.int32)
    index = tf.clip_by_value(index, 0, buckets - 1)
    counts = tf.math.unsorted_segment_sum(weights, index, buckets)
    x = x * weights
    head = tf.stack([lo, hi, num, tf.reduce_sum(x), tf.reduce_sum(tf.square(x))])
    return tf.concat([head, counts], axis=0)


_REDUCTIONS: dict[str, Callable[[Any], tf.Tensor]] = {
    "scalar": tf.identity,
    "histogram": histogram_stats,
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
