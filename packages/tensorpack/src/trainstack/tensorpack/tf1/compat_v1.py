"""``tfv1``, tensorpack's ``tensorpack.compat.tfv1``: ``tf.compat.v1`` with TF1's ``tf.layers``.

Every attribute is ``tf.compat.v1``'s, read at each access (so the room's replacements of
``tf.compat.v1.get_variable`` & co. while a tower is traced are what a script's ``tf.get_variable``
calls), except ``layers``: TensorFlow 2.21's ``tf.compat.v1.layers`` is Keras 3's, which has none of
TF1's layer functions, so ``tfv1.layers`` is the room's (``layers/tf_layers.py``); and ``contrib``,
which TensorFlow 2 does not have: ``tfv1.contrib`` has TF1's ``rnn``, ``layers`` and ``slim``
(``contrib.py``); and ``train``, ``tf.compat.v1.train`` read at each access but for
``range_input_producer`` (``input_producers.py``: TF1's queue is never filled in TensorFlow 2).
"""
from __future__ import annotations

import types
from typing import Any

import tensorflow as tf

from . import contrib as _contrib
from . import input_producers
from .layers import tf_layers

__all__ = ["tfv1"]


class _Train(types.ModuleType):
    """``tf.compat.v1.train``, read at each access, with TF1's ``range_input_producer``."""

    range_input_producer = staticmethod(input_producers.range_input_producer)

    def __getattr__(self, name: str) -> Any:
        return getattr(tf.compat.v1.train, name)

    def __dir__(self) -> list[str]:
        return sorted(dir(tf.compat.v1.train))


class TFv1(types.ModuleType):
    """``tf.compat.v1`` seen through one attribute of its own, ``layers``."""

    layers = tf_layers
    contrib = _contrib
    train = _Train("tfv1.train", _Train.__doc__)

    def __getattr__(self, name: str) -> Any:
        return getattr(tf.compat.v1, name)

    def __dir__(self) -> list[str]:
        return sorted({*dir(tf.compat.v1), "layers", "contrib", "train"})

    def __repr__(self) -> str:
        return "<module 'tfv1': tf.compat.v1 with TF1's tf.layers (trainstack.tensorpack)>"


#: tensorpack's ``tfv1``: ``tf.compat.v1``, with ``tfv1.layers`` TF1's functional layers
tfv1 = TFv1("tfv1", __doc__)
