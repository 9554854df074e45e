"""The model's variables as tensorpack's graph-side helpers see them (by name, by regex)."""
from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf

from trainstack.callbacks.variables import variable_name
from trainstack.towers import TowerFunc
from trainstack.towers.tower.owner import frozen_variable_ids, model_parts, walk_variables

__all__ = ["trainable_of", "variables_of", "keras_paths", "variable_name"]


def trainable_of(tower_func: TowerFunc) -> list[Any]:
    """The trainable ones among :func:`variables_of`; those of frozen Keras layers excluded."""
    frozen = frozen_variable_ids(tower_func.model_owner)
    return [v for v in variables_of(tower_func) if v.trainable and id(v) not in frozen]


def variables_of(tower_func: TowerFunc) -> list[Any]:
    """Every variable of ``tower_func``'s model, trainable or not, as TF1's collections listed them:
    those of the layers, modules and variables its owner holds (built before or in the tower),
    then any other the tower function created so far (during the first build: the layers called
    before this point)."""
    owner = tower_func.model_owner
    reached: dict[int, Any] = {}
    if owner is not None:
        parts = ([owner] if isinstance(owner, (tf.keras.layers.Layer, tf.Module))
                 else list(model_parts(owner).values()))
        walk_variables(parts, reached)
    for v in tower_func.variables:
        reached.setdefault(id(v), v)
    return list(reached.values())


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
