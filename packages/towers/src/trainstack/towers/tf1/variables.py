"""TF1 variables in a tower: ``tf.compat.v1.get_variable``.

A TF1 variable store does not exist in a trainstack tower (the tower function
runs on every trace; variables are created once, by objects the model owns), so
inside a trace ``get_variable`` raises :class:`~.switch.TF1CallError` naming
what replaces it, instead of TensorFlow's AttributeError deep inside, or a new
variable on every trace. Outside a trace it is TensorFlow's own.
"""
from __future__ import annotations

from typing import Any

import tensorflow as tf

from .switch import Frame, Patch, TF1CallError

__all__ = ["PATCHES"]

GET_VARIABLE = (
    "tf.compat.v1.get_variable() was called in tower {tower!r}: TF1 variable stores do not exist in "
    "a trainstack tower (the tower function runs on every trace, and variables are created once by "
    "objects the model owns). Create a Keras layer in ModelDesc.__init__ (keras.layers.Dense, "
    "Conv2D, BatchNormalization, ...) and call it in build_graph; for a bare weight, make it in "
    "__init__ with tf.Variable(...) or a layer's add_weight(...)")


def _get_variable(original: Any, frame: Frame, *args: Any, **kwargs: Any) -> Any:
    if frame.tower is None:  # a trainer's __init__, outside any tower
        return original(*args, **kwargs)
    raise TF1CallError(GET_VARIABLE.format(tower=frame.tower.name))


PATCHES = [Patch(lambda: tf.compat.v1, "get_variable", _get_variable)]
