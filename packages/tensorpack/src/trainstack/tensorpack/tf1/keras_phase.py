"""Keras's learning phase in a tower: Keras layers train in training towers, infer in the others.

TF1's Keras read a global *learning phase* (``keras.backend.learning_phase()``) in every
layer that behaves differently in training (``Dropout``, ``BatchNormalization``);
tensorpack fed it with ``KerasPhaseCallback``: 1 in the training steps, 0 in the
``InferenceRunner``'s (``setup_keras_trainer`` added that callback itself, and the Keras
examples list it). Keras 3 has no learning phase: a layer follows the ``training=``
argument of its outermost call, else its own default (inference). So while a tower is
traced, an outermost Keras layer call without ``training=`` gets the tower's
``is_training``, which Keras passes on to the layers inside it; an explicit ``training=``
is kept. (A tensorpack script that used such layers without ``KerasPhaseCallback`` ran them
in inference mode while training; here they train.)

Keras 3 layers also have no ``updates`` (TF1's list of their update ops, which tensorpack's
``mnist-keras.py`` adds to ``UPDATE_OPS``): a layer called with ``training=True`` updates its
state itself, in the step. In a tower, ``layer.updates`` is therefore ``[]``.
"""
from __future__ import annotations

from typing import Any

import keras

from .switch import Frame, Patch

__all__ = ["PATCHES"]

_DEPTH = "keras_call_depth"


def _call(original: Any, frame: Frame, layer: Any, *args: Any, **kwargs: Any) -> Any:
    if frame.tower is None:
        return original(layer, *args, **kwargs)
    depth = frame.scratch.get(_DEPTH, 0)
    if depth == 0 and kwargs.get("training") is None:
        kwargs["training"] = bool(frame.tower.is_training)
    frame.scratch[_DEPTH] = depth + 1
    try:
        return original(layer, *args, **kwargs)
    finally:
        frame.scratch[_DEPTH] = depth


def _updates(original: Any, frame: Frame, layer: Any) -> list[Any]:
    return []


PATCHES = [Patch(lambda: keras.Layer, "__call__", _call),
           Patch(lambda: keras.Layer, "updates", _updates, only_if_missing=True, as_property=True)]
