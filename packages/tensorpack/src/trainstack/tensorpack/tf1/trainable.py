"""The model's variables as tensorpack's graph-side helpers see them (by name, by regex)."""
from __future__ import annotations

from typing import Any

import keras

from trainstack.callbacks.variables import variable_name
from trainstack.towers import TowerFunc

__all__ = ["trainable_of", "variables_of", "keras_paths", "variable_name"]


def trainable_of(tower_func: TowerFunc) -> list[Any]:
    """``tower_func``'s model's trainable variables (see ``TowerFunc.model_trainable_variables``)."""
    return tower_func.model_trainable_variables()


def variables_of(tower_func: TowerFunc) -> list[Any]:
    """``tower_func``'s model's variables, trainable or not (see ``TowerFunc.model_variables``)."""
    return tower_func.model_variables()


def keras_paths(tower_func: TowerFunc) -> dict[int, str]:
    """The Keras path (``gen/dense_1/kernel``) of each weight of the Keras layers and variables
    ``tower_func``'s model owner holds, by ``id`` of the tf.Variable behind it (the one
    :func:`variables_of` lists). A tf.Variable created while a graph was traced is named by that
    graph, which may make a name scope unique (``gen/dense_1_1/kernel:0``); the path is Keras's own."""
    owner = tower_func.model_owner
    stack = [owner] if isinstance(owner, (keras.layers.Layer, keras.Variable)) else (
        list(vars(owner).values()) if hasattr(owner, "__dict__") else [])
    paths: dict[int, str] = {}
    visited: set[int] = set()
    while stack:
        x = stack.pop()
        if id(x) in visited:
            continue
        visited.add(id(x))
        if isinstance(x, keras.layers.Layer):
            stack.extend(x.weights)
        elif isinstance(x, keras.Variable):
            paths.setdefault(id(x.value), x.path)
        elif isinstance(x, (list, tuple)):
            stack.extend(x)
        elif isinstance(x, dict):
            stack.extend(x.values())
    return paths
