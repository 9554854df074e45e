"""tensorpack's apply_grad_processors with TF1's optimizers: the Keras optimizer standing for one
(tests/tensorpack/test_tf1_optimizers.py), or an error naming the Keras one."""
from __future__ import annotations

import keras
import pytest
import tensorflow as tf

from trainstack.tensorpack.tf1 import apply_grad_processors
from trainstack.towers import GlobalNormClip, ProcessedOptimizer


def test_apply_grad_processors_takes_a_tf1_optimizer_as_its_keras_stand_in():
    tf1 = apply_grad_processors(tf.compat.v1.train.GradientDescentOptimizer(0.1), [])
    assert isinstance(tf1, ProcessedOptimizer)
    assert isinstance(tf1.optimizer, keras.optimizers.Optimizer)
    with pytest.raises(TypeError, match="FtrlOptimizer is not supported.*keras.optimizers.Ftrl"):
        apply_grad_processors(tf.compat.v1.train.FtrlOptimizer(0.1), [])
    # a Keras optimizer is the core's case
    opt = keras.optimizers.SGD(0.1)
    assert apply_grad_processors(opt, [GlobalNormClip(1.0)]).optimizer is opt
