"""tensorpack 0.11's ``tensorpack.predict.config``: ``PredictConfig``, the core's with tensorpack's signature."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import tensorflow as tf

from trainstack.towers import ModelDescBase, TowerFunc
from trainstack.towers import PredictConfig as CorePredictConfig

from .._replaced import unprovided

__all__ = ["PredictConfig"]


class PredictConfig(CorePredictConfig):
    """tensorpack's PredictConfig: the core's :class:`~trainstack.towers.PredictConfig`, with tensorpack's
    signature. Its TF1 arguments: ``session_creator`` is refused with a TypeError naming
    :class:`~trainstack.towers.RuntimeConfig`; ``create_graph=True`` (tensorpack's default) is what
    always happens (each predictor traces its own ``tf.function``), ``False`` is refused."""

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
        super().__init__(model, tower_func, input_signature, input_names, output_names,
                         session_init=session_init, return_input=return_input)


__getattr__ = unprovided(__name__)
