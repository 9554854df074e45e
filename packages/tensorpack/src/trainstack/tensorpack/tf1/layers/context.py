"""What a tensorpack layer function reads from the tower it is built in, and how it makes its variables.

tensorpack's layers read ``get_current_tower_context()`` (``BatchNorm``'s and ``Dropout``'s
default ``training``; which tower updates ``BatchNorm``'s moving averages) and create their
variables with ``tf.get_variable`` under the layer's variable scope. Here both exist only while
a tower function is built (the room's switch is engaged): :func:`tower_of` and
:func:`get_variable` say so clearly elsewhere, naming the layer, instead of TensorFlow's own
``get_variable`` making an unrelated variable at a script's top level.
"""
from __future__ import annotations

import logging
import weakref
from typing import Any

import tensorflow as tf

from ..switch import current

__all__ = ["tower_of", "get_variable", "layer_label", "log_shape_once", "disable_layer_logging"]

logger = logging.getLogger("trainstack.tensorpack")


def layer_label(layer: str) -> str:
    """``Conv2D('conv0')``: the layer function and the variable scope it runs in, for messages."""
    scope = tf.compat.v1.get_variable_scope().name
    return f"{layer}({scope!r})" if scope else f"{layer}()"


def tower_of(layer: str) -> Any:
    """The TowerContext being built (``layer`` names the caller in the error outside any tower)."""
    frame = current()
    if frame is None or frame.tower is None or frame.tower_func is None:
        raise RuntimeError(
            f"{layer_label(layer)} must be called inside the tower function (ModelDesc.build_graph), "
            "under the trainer's TowerContext: tensorpack's layers make their variables there and read "
            "whether the tower trains")
    return frame.tower


def get_variable(layer: str, name: str, shape: Any, initializer: Any, *, dtype: Any = tf.float32,
                 trainable: bool = True) -> Any:
    """``tf.compat.v1.get_variable(name, ...)`` in the current variable scope of the tower being
    built: the room's TF1 variable (created on the first build of the first tower, reused after;
    see ``tf1/variables.py``), or what the scope's custom getters make of it."""
    tower_of(layer)
    if isinstance(initializer, str):  # tf.layers took Keras' names ('he_normal')
        import keras  # noqa: PLC0415 - only for this rare form

        initializer = keras.initializers.get(initializer)
    return tf.compat.v1.get_variable(name, shape, dtype=dtype, initializer=initializer, trainable=trainable)


#: the layer names whose shapes were logged, per tower function
_logged: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()
_logging = {"enabled": True}


def disable_layer_logging() -> None:
    """Log no more layer shapes (tensorpack's ``disable_layer_logging``)."""
    _logging["enabled"] = False


def log_shape_once(name: str, inputs: Any, outputs: Any) -> None:
    """Log ``'name': input shape --> output shape`` once per model, in its main training tower
    (or its first tower, for a predictor's model), as tensorpack logged its layers."""
    frame = current()
    if not _logging["enabled"] or frame is None or frame.tower is None or frame.tower_func is None:
        return
    tower = frame.tower
    if not (tower.is_main_training_tower or frame.tower_func.first_tower == tower.name):
        return
    seen = _logged.setdefault(frame.tower_func, set())
    if name in seen:
        return
    seen.add(name)
    logger.info("%-12s: %s --> %s", f"'{name}'", _shape(inputs), _shape(outputs))


def _shape(x: Any) -> str:
    if isinstance(x, (list, tuple)) and x:
        x = x[0]
    shape = getattr(x, "shape", None)
    return str(shape.as_list()) if shape is not None and hasattr(shape, "as_list") else repr(shape)
