"""The monitors' state: what callbacks keep across epochs and log, held in checkpoints.

A resumed run must log what the uninterrupted run would: the moving averages of
:func:`add_moving_summary` must continue, not restart, and so must a callback's own
history (:class:`StatMonitorParamSetter`'s last values, :class:`EarlyStopping`'s best).
tensorpack kept the averages as variables in its checkpoints; here :class:`ModelSaver`
writes, next to the model and the loop state, under the checkpoint key ``monitor_state``,
the state of every *stateful callback* (``monitor_state/callbacks/<callback name>/...``)
and the last value of every scalar of ``trainer.monitors`` (``monitor_state/monitors/``:
what ``get_latest`` answers the callbacks), and restores them when the run resumes from
one of its checkpoints.

A callback is stateful when it has these two methods (a protocol, not a base class):

- ``checkpoint_state() -> tf.Module``: the trackable holding its state *now* (a callback
  keeping Python values copies them into its variables here). Called at each save, and
  before a restore (which then overwrites what the checkpoint holds).
- ``load_checkpoint_state() -> None``: called after a restore: set the Python state from
  those variables.

Callbacks wrapped in a :class:`ProxyCallback` (``PeriodicTrigger``, ...) are found
through the wrappers.
"""
from __future__ import annotations

import logging
import os
from typing import Any, Protocol, TypeGuard

import tensorflow as tf

from trainstack.loop import Callback, Trainer

__all__ = ["MONITOR_STATE_KEY", "MonitorState", "NumbersState", "LatestScalars", "stateful_callbacks"]

logger = logging.getLogger("trainstack.callbacks")

#: The checkpoint key under which the monitors' state is stored.
MONITOR_STATE_KEY = "monitor_state"
_CALLBACKS = "callbacks"


class StatefulCallback(Protocol):
    """What :func:`stateful_callbacks` finds: a callback with ``checkpoint_state()`` (a
    ``tf.Module`` of its state's variables) and ``load_checkpoint_state()``."""

    @property
    def name(self) -> str: ...

    def checkpoint_state(self) -> Any: ...

    def load_checkpoint_state(self) -> None: ...


def _is_stateful(cb: Any) -> TypeGuard[StatefulCallback]:
    return callable(getattr(cb, "checkpoint_state", None)) and callable(
        getattr(cb, "load_checkpoint_state", None))


def _unwrapped(cb: Callback) -> list[Callback]:
    """``cb`` and the callbacks it wraps (``ProxyCallback.cb``), outermost first."""
    chain = [cb]
    while isinstance(inner := getattr(chain[-1], "cb", None), Callback) and len(chain) < 100:
        chain.append(inner)
    return chain


def stateful_callbacks(trainer: Trainer) -> list[tuple[str, int, StatefulCallback]]:
    """``(key, position, callback)`` of the trainer's stateful callbacks, in the callbacks'
    order. ``key`` is the callback's name (``#2``, ``#3``... appended when names repeat);
    ``position`` is the index, in ``trainer.callbacks.cbs``, of the callback or of the
    wrapper holding it."""
    found: list[tuple[str, int, StatefulCallback]] = []
    seen: dict[str, int] = {}
    for position, top in enumerate(trainer.callbacks.cbs):
        for cb in _unwrapped(top):
            if _is_stateful(cb):
                n = seen[cb.name] = seen.get(cb.name, 0) + 1
                found.append((cb.name if n == 1 else f"{cb.name}#{n}", position, cb))
    return found


class NumbersState(tf.Module):
    """A callback's Python numbers, in variables a checkpoint holds: each field is a list of at
    most ``capacity`` floats (a float64 vector and its length; float64 holds epoch numbers and
    counts exactly). ``put(field, values)`` before a save, ``get(field)`` after a restore."""

    def __init__(self, name: str, **capacity: int) -> None:
        super().__init__(name=name)
        self._capacity = dict(capacity)
        with tf.init_scope(), tf.device("CPU:0"):
            for field, size in capacity.items():
                setattr(self, field, tf.Variable(tf.zeros([size], tf.float64), trainable=False, name=field))
                setattr(self, field + "_length",
                        tf.Variable(0, dtype=tf.int64, trainable=False, name=field + "_length"))

    def put(self, field: str, values: Any) -> None:
        """Hold ``values`` (numbers, at most the field's capacity) in ``field``."""
        values = [float(v) for v in values]
        size = self._capacity[field]
        if len(values) > size:
            raise ValueError(f"{self.name}.{field} holds at most {size} values, got {len(values)}")
        getattr(self, field).assign(values + [0.0] * (size - len(values)))
        getattr(self, field + "_length").assign(len(values))

    def get(self, field: str) -> list[float]:
        """The values held in ``field``."""
        n = int(getattr(self, field + "_length").numpy())
        return [float(v) for v in getattr(self, field).numpy()[:n]]


def _escape(name: str) -> str:
    """A local name as it appears in checkpoint keys (TensorFlow's escaping)."""
    return name.replace(".", "..").replace("/", ".S")


class LatestScalars(tf.Module):
    """The last value of every scalar in ``trainer.monitors`` (what ``get_latest`` answers),
    in variables: callbacks read them at the next trigger (a StatMonitorParamSetter placed
    before the callback putting its statistic reads the previous epoch's value).

    Restored values are recorded in the hub's history without reaching the monitors (no
    writer logs them twice), and only for names the resumed run has not put yet.
    """

    def __init__(self) -> None:
        super().__init__(name="monitors")
        with tf.init_scope(), tf.device("CPU:0"):
            unknown = tf.TensorShape([None])  # the number of scalars grows as training goes
            self.names = tf.Variable(tf.constant([], tf.string), shape=unknown, trainable=False, name="names")
            self.values = tf.Variable(tf.zeros([0], tf.float64), shape=unknown, trainable=False, name="values")
            self.is_int = tf.Variable(tf.zeros([0], tf.bool), shape=unknown, trainable=False, name="is_int")

    def capture(self, hub: Any) -> None:
        names = hub.scalar_names()
        latest = [hub.get_latest(n) for n in names]
        self.names.assign(tf.constant(names, tf.string, shape=[len(names)]))
        self.values.assign(tf.constant([float(v) for v in latest], tf.float64, shape=[len(names)]))
        self.is_int.assign(tf.constant([isinstance(v, int) for v in latest], tf.bool, shape=[len(names)]))

    def apply(self, hub: Any) -> list[str]:
        """Record the values held in ``hub``'s history, for names it has none of; return those names."""
        known = set(hub.scalar_names())
        recorded = []
        writers, hub.monitors = hub.monitors, []  # put_scalar records the history, dispatches to none
        try:
            for name, value, is_int in zip(self.names.numpy(), self.values.numpy(), self.is_int.numpy()):
                name = name.decode()
                if name not in known:
                    hub.put_scalar(name, int(value) if is_int else float(value))
                    recorded.append(name)
        finally:
            hub.monitors = writers
        return recorded


class MonitorState(tf.Module):
    """The trackable stored under ``monitor_state``: the stateful callbacks' states by key,
    and the hub's latest scalars (``monitors``).

    ``capture(trainer)`` fills it before a save; :meth:`restore` reads a checkpoint into
    the callbacks of a resumed run.
    """

    def __init__(self) -> None:
        super().__init__(name=MONITOR_STATE_KEY)
        self.monitors = LatestScalars()
        self.callbacks: dict[str, Any] = {}

    def capture(self, trainer: Trainer) -> None:
        """Hold the current state of every stateful callback of ``trainer``, and its latest scalars."""
        if trainer.monitors is not None:
            self.monitors.capture(trainer.monitors)
        self.callbacks = {key: cb.checkpoint_state() for key, _, cb in stateful_callbacks(trainer)}

    @staticmethod
    def restore(trainer: Trainer, path: str | os.PathLike, who: str) -> list[str]:
        """Set the stateful callbacks of ``trainer`` to their state in checkpoint ``path``;
        return the keys restored. A checkpoint without monitor state (written before
        checkpoints held it) or without a callback's state leaves that state as it is, with
        an INFO line; a state that does not fit (another ``last_k``...) with a warning.
        ``who`` opens the log lines."""
        path = os.fspath(path)
        keys = [name for name, _ in tf.train.list_variables(path)]
        if not any(k.startswith(MONITOR_STATE_KEY + "/") for k in keys):
            logger.info("%s: %s holds no monitor state (it was written before checkpoints held "
                        "it): moving averages and callbacks' histories start afresh.", who, path)
            return []
        restored, missing = [], []
        if trainer.monitors is not None and any(k.startswith(f"{MONITOR_STATE_KEY}/monitors/") for k in keys):
            latest = LatestScalars()
            holder = tf.Module(name=MONITOR_STATE_KEY)
            holder.monitors = latest
            tf.train.Checkpoint(**{MONITOR_STATE_KEY: holder}).read(path).expect_partial()
            if latest.apply(trainer.monitors):
                restored.append("the monitors' latest scalars")
        for key, _, cb in stateful_callbacks(trainer):
            prefix = f"{MONITOR_STATE_KEY}/{_CALLBACKS}/{_escape(key)}/"
            if not any(k.startswith(prefix) for k in keys):
                missing.append(key)
                continue
            holder = tf.Module(name=MONITOR_STATE_KEY)
            holder.callbacks = {key: cb.checkpoint_state()}
            try:
                tf.train.Checkpoint(**{MONITOR_STATE_KEY: holder}).read(path).expect_partial()
            except (ValueError, TypeError, tf.errors.OpError) as e:
                # e.g. StatMonitorParamSetter(last_k=...) changed: its Python state is left
                # as it was, and copied back over what was partly read
                logger.warning("%s: the state of %s in %s does not fit it (%s); it starts afresh.",
                               who, key, path, (str(e).strip() or type(e).__name__).splitlines()[0])
                cb.checkpoint_state()
                continue
            cb.load_checkpoint_state()
            restored.append(key)
        if restored:
            logger.info("%s: restored the monitors' state from %s: %s.", who, path, ", ".join(restored))
        if missing:
            logger.info("%s: %s holds no state of %s; it starts afresh.", who, path, ", ".join(missing))
        return restored
