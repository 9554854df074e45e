"""TF1's gradient overrides in a tower: ``@tf.RegisterGradient(name)`` inside ``build_graph``.

tensorpack's ``Saliency/saliency-maps.py`` registers its guided ReLU gradient in ``build_graph`` and
builds under ``tf.get_default_graph().gradient_override_map({'Relu': 'GuidedReLU'})``, then takes
``tf.gradients`` of the logits. ``gradient_override_map`` and ``tf.gradients`` work as written in the
graph a tower is traced in (TensorFlow's own: the op records the override, ``tf.gradients`` looks it
up while the tower is traced). What differs is that TF1 built the graph once, while a tower function
is traced more than once (to create its variables, then for each use), and TensorFlow refuses a second
registration of one name. So here a registration whose name is taken by the same function (the same
code: the same ``build_graph`` traced again) keeps the first one; another function under a taken name
is TensorFlow's own KeyError, as in TF1. Registrations stay, as TF1's did: a traced function's
gradient may be built after its trace.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tensorflow as tf

from .switch import Frame, Patch

__all__ = ["PATCHES"]

#: name -> the code of the function the room registered under it
_registered: dict[str, Any] = {}


class _RegisterGradient:
    """``@tf.RegisterGradient(op_type)`` that keeps the first registration of the same function."""

    def __init__(self, original: Any, op_type: str) -> None:
        if not isinstance(op_type, str):
            raise TypeError("op_type must be a string")
        self._original, self._op_type = original, op_type

    def __call__(self, f: Callable) -> Callable:
        code = getattr(f, "__code__", None)
        if code is not None and _registered.get(self._op_type) is code:
            return f
        result = self._original(self._op_type)(f)
        _registered[self._op_type] = code
        return result


def _register_gradient(original: Any, frame: Frame, op_type: str) -> _RegisterGradient:
    return _RegisterGradient(original, op_type)


PATCHES = [
    Patch(lambda: tf.compat.v1, "RegisterGradient", _register_gradient),
    Patch(lambda: tf, "RegisterGradient", _register_gradient),
]
