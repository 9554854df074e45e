"""tensorpack 0.11's ``tensorpack.predict.config``: ``PredictConfig``, the core's with tensorpack's signature."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import tensorflow as tf

from trainstack.tensorpack.tf1 import TowerFunc as RoomTowerFunc
from trainstack.towers import ModelDescBase, TowerFunc
from trainstack.towers import PredictConfig as CorePredictConfig

from .._replaced import unprovided

__all__ = ["PredictConfig"]


class PredictConfig(CorePredictConfig):
    """tensorpack's PredictConfig: the core's :class:`~trainstack.towers.PredictConfig`, with tensorpack's
    signature. Its TF1 arguments: ``session_creator`` is refused with a TypeError naming
    :class:`~trainstack.towers.RuntimeConfig`; ``create_graph=True`` (tensorpack's default) is what
    always happens (each predictor traces its own ``tf.function``), ``False`` is refused.

    A plain ``tower_func`` (a function with ``input_signature``) is built in the TF1 room, as tensorpack's
    trainers build one: tensorpack's layers (``Conv2D``, ...), ``argscope`` and ``tf.layers`` work in it, as in
    tensorpack's inference scripts (``examples/CaffeModels/load-*.py``)."""

    def __init__(self, model: ModelDescBase | None = None,
                 tower_func: TowerFunc | Callable[..., Any] | None = None,
                 input_signature: Sequence[tf.TensorSpec] | None = None,
                 input_names: Sequence[str] | None = None, output_names: Sequence[str] | None = None,
                 session_creator: Any = None, session_init: Any = None, return_input: bool = False,
                 create_graph: bool = True) -> None:
        if session_creator is not None:
            raise TypeError("PredictConfig(session_creator=) is a TF1 argument: TensorFlow 2 creates no session. "
                            "Runtime settings go to trainstack.towers.RuntimeConfig(...).apply() at the start of "
                            "the program; initial variable values go to session_init=")
        if create_graph is not True:
            raise ValueError("PredictConfig(create_graph=False): there is no default graph to build into "
                             "in TensorFlow 2; every predictor traces its own tf.function")
        if (model is None and callable(tower_func) and not isinstance(tower_func, TowerFunc)
                and input_signature is not None):
            tower_func, input_signature = RoomTowerFunc(tower_func, input_signature), None
        super().__init__(model, tower_func, input_signature, input_names, output_names,
                         session_init=session_init, return_input=return_input)


__getattr__ = unprovided(__name__)
