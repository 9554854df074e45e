"""TF1 collections of variables: ``get_collection``, ``trainable_variables``, ``global_variables``.

tensorpack's GAN and fine-tuning scripts select variables from the TF1 graph's
collections::

    self.g_vars = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.TRAINABLE_VARIABLES, scope='gen')
    opt.minimize(cost, var_list=tf.compat.v1.trainable_variables())

In TensorFlow 2 these collections are empty (Keras layers own their variables).
While a tower is traced, and in a tensorpack-style trainer's ``__init__`` once it
has built a tower, the room answers them from the model, as TF1 did from the
graph:

- ``TRAINABLE_VARIABLES`` / ``trainable_variables()``: the model's trainable
  variables (frozen layers excluded), as ``regularize_cost`` sees them;
- ``GLOBAL_VARIABLES``, ``MODEL_VARIABLES`` / ``global_variables()``,
  ``model_variables()``: every variable of the model, trainable or not (the
  optimizer's slots and the step counter belong to the trainer, not the model,
  and are in neither);
- ``UPDATE_OPS``: empty: Keras layers (``BatchNormalization``) update their
  statistics themselves when called with ``training=True``.

``scope`` is a regex matched with ``re.match`` against the variable's name, as
TF1's ``get_collection`` did; the names are the Keras paths (``gen/dense_1/kernel``,
without the tower's name scope or ``:0``; the tf.Variable behind a Keras weight
may be named otherwise by the graph it was created in). The variables listed are
tf.Variables, as TF1's were (what ``var_list=`` takes). During the first build of a tower
the answer holds the variables created so far, as TF1's collections did. Other
keys, and every call outside the switch (another thread, a script's top level,
a trainstack callback), are TensorFlow's own. In the graph a script's callback builds in
``_setup_graph`` (:mod:`.callback_graphs`) they list the trainer's model's variables, each seen as
TF1 code saw it (``v.op.name == 'discrim/conv0/W'``, a :class:`TF1VariableView`).
"""
from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import tensorflow as tf

from .layers.varreplace import TF1VariableView
from .recording import built_tower_funcs
from .switch import Frame, Patch
from .trainable import keras_paths, trainable_of, variable_name, variables_of

__all__ = ["PATCHES", "CALLBACK_GRAPH"]

#: the key of a frame's ``scratch`` naming the tower functions whose model a script callback's
#: ``_setup_graph`` sees (see :mod:`.callback_graphs`)
CALLBACK_GRAPH = "callback graph"

_KEYS = tf.compat.v1.GraphKeys
#: the collections answered from the model: key -> the model's variables it holds
_FROM_MODEL: dict[str, Callable[[Any], list[Any]]] = {
    _KEYS.TRAINABLE_VARIABLES: trainable_of,
    _KEYS.GLOBAL_VARIABLES: variables_of,
    _KEYS.MODEL_VARIABLES: variables_of,
}


def _tower_funcs(frame: Frame) -> list[Any]:
    """The tower functions whose model answers: the tower's, else (a trainer's ``__init__``) those
    that built a tower so far; [] when there is none (TensorFlow's own answer then)."""
    if frame.tower is not None:
        return [frame.tower_func]
    if CALLBACK_GRAPH in frame.scratch:
        return list(frame.scratch[CALLBACK_GRAPH])
    return built_tower_funcs()


def _answer(frame: Frame, key: Any, scope: Any) -> list[Any] | None:
    """The collection ``key`` of the model, filtered by ``scope``; None: TensorFlow's own."""
    if not isinstance(key, str):
        return None
    funcs = _tower_funcs(frame)
    if not funcs:
        return None
    if key == _KEYS.UPDATE_OPS:
        return []
    of = _FROM_MODEL.get(key)
    if of is None:
        return None
    found: dict[int, Any] = {}
    for tower_func in funcs:
        for v in of(tower_func):
            found.setdefault(id(v), v)
    paths: dict[int, str] = {}
    for tower_func in funcs:
        paths.update(keras_paths(tower_func))
    named = [(v, paths.get(id(v)) or variable_name(v)) for v in found.values()]
    if scope is not None:
        pattern = re.compile(scope)
        named = [(v, name) for v, name in named if pattern.match(name)]
    if CALLBACK_GRAPH in frame.scratch:
        return [TF1VariableView(v, name) for v, name in named]
    return [v for v, _ in named]


def _get_collection(original: Any, frame: Frame, key: Any, scope: Any = None) -> list[Any]:
    answer = _answer(frame, key, scope)
    return original(key, scope) if answer is None else answer


def _listing(key: str) -> Callable[..., list[Any]]:
    """``tf.compat.v1.<listing>(scope=None)``: TF1's ``get_collection(key, scope)``."""

    def emulate(original: Any, frame: Frame, scope: Any = None) -> list[Any]:
        answer = _answer(frame, key, scope)
        return original(scope) if answer is None else answer

    return emulate


PATCHES = [
    Patch(lambda: tf.compat.v1, "get_collection", _get_collection),
    Patch(lambda: tf.compat.v1, "trainable_variables", _listing(_KEYS.TRAINABLE_VARIABLES)),
    Patch(lambda: tf.compat.v1, "global_variables", _listing(_KEYS.GLOBAL_VARIABLES)),
    Patch(lambda: tf.compat.v1, "model_variables", _listing(_KEYS.MODEL_VARIABLES)),
]
