"""The linear model of the predictor tests, ``y = x @ W + b`` and ``s = sum(x)``, restored from arrays.

It lives in a plain module (not a test file) because ``MultiProcessDatasetPredictor``'s spawned
workers unpickle its class by name: the tests put this folder on ``sys.path`` (``conftest.py``) and a
spawned process starts with its parent's ``sys.path``, so the workers import it too (a class of a test
module, imported by pytest with ``--import-mode=importlib``, is not importable there).
"""
from __future__ import annotations

from typing import Any

import numpy as np
import tensorflow as tf

from trainstack.tensorpack import DictRestore, ModelDesc, PredictConfig

_RNG = np.random.RandomState(0)
W, B = _RNG.rand(3, 2).astype(np.float32), _RNG.rand(2).astype(np.float32)


class Linear(ModelDesc):
    def inputs(self):
        return [tf.TensorSpec([None, 3], tf.float32, "x")]

    def build_graph(self, x):
        w = tf.compat.v1.get_variable("W", [3, 2])
        b = tf.compat.v1.get_variable("b", [2])
        tf.identity(tf.matmul(x, w) + b, name="y")
        tf.identity(tf.reduce_sum(x, axis=1), name="s")


def config(**kwargs: Any) -> PredictConfig:
    """A PredictConfig of a new :class:`Linear`, its weights set to ``W`` and ``B``."""
    return PredictConfig(model=Linear(), input_names=["x"], output_names=["y", "s"],
                         session_init=DictRestore({"W": W, "b": B}), **kwargs)
