"""Summaries recorded while a step is traced: the SummaryCollection and which one records.

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
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import tensorflow as tf

from .eager_state import eager_state
from .variables import is_variable

__all__ = [
    "SummaryCollection", "get_summary_collection", "summary_collection_scope", "summary_collection_chosen",
    "default_summary_collection", "histogram_stats",
]

#: Summary types of :func:`add_tensor_summary` -> suffix of the reported name.
SUMMARY_TYPES = {"scalar": "", "histogram": "-histogram", "mean": "-mean", "rms": "-rms",
                 "sparsity": "-sparsity"}

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

    def add_summary(self, tensor: Any, name: str, summary_type: str = "scalar", exact_name: bool = False) -> None:
        """Keep a summary of ``tensor``, reported as ``name`` + the type's suffix (as ``name``
        itself with ``exact_name``: a tag given by other code, such as tensorpack's).

        ``summary_type`` is one of :data:`SUMMARY_TYPES` (see
        :func:`add_tensor_summary`). The value is computed in the step and
        kept on the device; a histogram is kept as fixed-size statistics. A
        ``tf.Variable`` (or Keras variable) is not copied: it is read, and
        reduced, only when reported.
        """
        if summary_type not in SUMMARY_TYPES:
            raise ValueError(f"summary {name!r}: unknown type {summary_type!r}; expected one of "
                             f"{list(SUMMARY_TYPES)}")
        key = name if exact_name else name + SUMMARY_TYPES[summary_type]
        kind = "histogram" if summary_type == "histogram" else "scalar"
        reduce = _REDUCTIONS[summary_type]
        variable = is_variable(tensor)
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


def _as_tensor(x: Any, name: str) -> tf.Tensor:
    try:
        return tf.convert_to_tensor(x)
    except (TypeError, ValueError) as e:
        raise TypeError(f"summary {name!r}: expected a tensor, got {x!r:.60} "
                        f"({type(x).__name__})") from e
