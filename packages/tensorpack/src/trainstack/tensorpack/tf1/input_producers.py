"""TF1's ``tf.train.range_input_producer`` in an InputSource's tensors (``tfv1.train``).

TF1's producer was a queue filled by a queue runner thread: ``range_input_producer(limit,
shuffle=False).dequeue()`` gave ``0, 1, ..., limit - 1, 0, 1, ...``, one value per session run.
TensorFlow 2 runs no queue runners, so the queue stays empty and closed. Here the producer is a
counter variable: each run of the traced step reads ``(n - 1) % limit`` after adding 1 to it.

TF1 made a new queue at each call; trainstack traces a step more than once (one variant per set of
fetches), calling an InputSource's ``get_tensor_fn`` at each trace. So a producer is one counter per
InputSource, tower and call (the n-th producer of that tower's tensors), kept across traces: the
tensorpack layer's InputSources say whose tensors are being built (:func:`producing_for`). Called
anywhere else, or with what it cannot do (``shuffle=True``, TF1's default, ``num_epochs``), it is a
:class:`TF1CallError` naming ``tf.data``.
"""
from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Iterator
from typing import Any

import tensorflow as tf

from .switch import TF1CallError

__all__ = ["producing_for", "range_input_producer"]

_local = threading.local()
#: each InputSource's counters, by (tower, n-th call)
_counters: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

_REPLACEMENT = ("use tf.data instead (tf.data.Dataset.range(limit).repeat(), .shuffle(limit) to shuffle) in "
                "a DataFlow or an input of trainstack.inputs")


@contextlib.contextmanager
def producing_for(source: Any, tower_index: int) -> Iterator[None]:
    """Inside: the tensors of ``source``'s tower ``tower_index`` are built (its producers' owner)."""
    outer = getattr(_local, "owner", None)
    _local.owner = [source, tower_index, 0]
    try:
        yield
    finally:
        _local.owner = outer


class _RangeQueue:
    """What ``range_input_producer`` returns: ``dequeue()`` is the next index at each step."""

    def __init__(self, counter: tf.Variable, limit: tf.Tensor, name: str) -> None:
        self._counter, self._limit, self.name = counter, limit, name

    def dequeue(self, name: str | None = None) -> tf.Tensor:
        with tf.name_scope(name or "dequeue"):
            n = self._counter.assign_add(1, read_value=True)
            return tf.cast((n - 1) % tf.cast(self._limit, tf.int64), tf.int32)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        raise TF1CallError(f"range_input_producer(...).{name}: trainstack's producer has dequeue() only; "
                           + _REPLACEMENT)


def range_input_producer(limit: Any, num_epochs: Any = None, shuffle: bool = True, seed: Any = None,
                         capacity: int = 32, shared_name: Any = None, name: str | None = None) -> _RangeQueue:
    """TF1's ``tf.train.range_input_producer(limit, shuffle=False)``: ``dequeue()`` gives 0 to
    ``limit - 1`` in order, again and again, one value per step (see the module docstring)."""
    call = f"tf.train.range_input_producer(limit, num_epochs={num_epochs!r}, shuffle={shuffle!r})"
    if shuffle:
        raise TF1CallError(f"{call}: shuffle=True (TF1's default) is not supported: pass shuffle=False, or "
                           + _REPLACEMENT)
    if num_epochs is not None:
        raise TF1CallError(f"{call}: num_epochs (the end of the input) is not supported; " + _REPLACEMENT)
    owner = getattr(_local, "owner", None)
    if owner is None:
        raise TF1CallError(f"{call} was called outside the tensors of an InputSource (TensorInput's function): "
                           "only there does trainstack know whose counter it is; " + _REPLACEMENT)
    source, tower, n = owner
    owner[2] += 1
    counters = _counters.setdefault(source, {})
    if (tower, n) not in counters:
        with tf.init_scope():
            counters[tower, n] = tf.Variable(0, dtype=tf.int64, trainable=False, name="input_producer_counter")
    with tf.name_scope(name or "input_producer"):
        return _RangeQueue(counters[tower, n], tf.convert_to_tensor(limit), name or "input_producer")
