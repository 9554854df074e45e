"""A minimal TensorFlow trainer for the callback tests.

The towers layer is not a dependency of the callbacks layer, so these tests
drive callbacks with a loop ``Trainer`` whose ``train_op`` is a
``tf.function``: linear regression y = x·w + b on fixed data, trained with
Keras SGD. The step returns a dict of named tensors, which is how plain
steps expose values to callbacks' fetches.
"""
from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import pytest
import tensorflow as tf

from trainstack.loop import Trainer


class TFLinearTrainer(Trainer):
    """Linear regression with SGD; ``checkpoint_objects`` lists what a saver saves."""

    def __init__(self, learning_rate: float = 0.1, batch: int = 16, seed: int = 0) -> None:
        super().__init__()
        rng = np.random.default_rng(seed)
        self.x = tf.constant(rng.normal(size=(batch, 3)).astype("float32"))
        true_w = np.array([[1.0], [-2.0], [0.5]], dtype="float32")
        self.y = tf.constant(self.x.numpy() @ true_w + 0.3)
        self.w = tf.Variable(tf.zeros((3, 1)), name="w")
        self.b = tf.Variable(tf.zeros((1,)), name="b")
        self.optimizer = tf.keras.optimizers.SGD(learning_rate=learning_rate)
        # added to the reported loss only (not to the gradient): tests set it
        # to NaN to make the loss go bad
        self.loss_offset = tf.Variable(0.0, name="loss_offset", trainable=False)
        self.seen_learning_rates: list[float] = []

        @tf.function
        def step():
            with tf.GradientTape() as tape:
                pred = tf.matmul(self.x, self.w) + self.b
                loss = tf.reduce_mean(tf.square(pred - self.y))
            grads = tape.gradient(loss, [self.w, self.b])
            self.optimizer.apply_gradients(zip(grads, [self.w, self.b]))
            return {"loss": loss + self.loss_offset, "w_norm": tf.norm(self.w)}

        self._step = step

    @property
    def checkpoint_objects(self) -> dict:
        """The trackables a checkpoint of this trainer holds."""
        return {"w": self.w, "b": self.b, "optimizer": self.optimizer}

    def run_step(self):
        self.seen_learning_rates.append(float(self.optimizer.learning_rate.numpy()))
        return self.hooked_run(self._step)


@pytest.fixture
def linear_trainer():
    """Factory: ``linear_trainer(**kwargs)`` -> a fresh TFLinearTrainer."""
    return TFLinearTrainer
