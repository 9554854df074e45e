"""The small classifier and data the multi-worker / parameter-server tests train.

A plain module (not a test file): the worker scripts started by the launcher
import it, and the tests use it for the single-process reference.
"""
from __future__ import annotations

from typing import Any

import keras
import numpy as np
import tensorflow as tf

from trainstack.towers import ModelDesc, get_current_tower_context

NUM_FEATURES = 8
NUM_CLASSES = 3
BATCH = 16
LEARNING_RATE = 0.1
#: relative/absolute tolerance of "the same SGD step" (float32 sums taken in another order)
RTOL, ATOL = 1e-5, 1e-6


def make_data(n: int = 1024, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A separable 3-class problem: labels are the argmax of a fixed linear map."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, NUM_FEATURES)).astype(np.float32)
    w = np.random.default_rng(1234).normal(size=(NUM_FEATURES, NUM_CLASSES))
    y = np.argmax(x @ w, axis=1).astype(np.int32)
    return x, y


def shard(x: np.ndarray, y: np.ndarray, index: int, count: int) -> tuple[np.ndarray, np.ndarray]:
    """Worker ``index``'s rows of ``count``: every ``count``-th row starting at ``index``."""
    return x[index::count], y[index::count]


def first_batches(num_workers: int) -> tuple[np.ndarray, np.ndarray]:
    """The workers' first batches, concatenated (worker 0's first)."""
    x, y = make_data()
    parts = [shard(x, y, k, num_workers) for k in range(num_workers)]
    return (np.concatenate([p[0][:BATCH] for p in parts]),
            np.concatenate([p[1][:BATCH] for p in parts]))


class RunningMean(keras.layers.Layer):
    """A non-trainable moving average of its inputs' mean, updated in training (like BatchNorm's
    statistics): each worker updates it from its own batches."""

    def build(self, input_shape: Any) -> None:
        self.mean = self.add_weight(shape=(), initializer="zeros", trainable=False, name="mean")

    def call(self, x: tf.Tensor, training: bool = False) -> tf.Tensor:
        if training:
            self.mean.assign(0.9 * self.mean + 0.1 * tf.reduce_mean(x))
        return x


class Classifier(ModelDesc):
    """One hidden layer; returns the mean cross-entropy and records the accuracy."""

    def __init__(self) -> None:
        self.hidden = keras.layers.Dense(16, activation="tanh")
        self.logits = keras.layers.Dense(NUM_CLASSES)
        self.running = RunningMean()

    def inputs(self) -> list[tf.TensorSpec]:
        return [tf.TensorSpec([None, NUM_FEATURES], tf.float32, "x"),
                tf.TensorSpec([None], tf.int32, "label")]

    def build_graph(self, x: tf.Tensor, label: tf.Tensor) -> tf.Tensor:
        x = self.running(x, training=get_current_tower_context().is_training)
        logits = self.logits(self.hidden(x))
        cost = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=label, logits=logits))
        return tf.identity(cost, name="cost")

    def optimizer(self) -> keras.optimizers.Optimizer:
        return keras.optimizers.SGD(LEARNING_RATE)

    def accuracy(self, x: np.ndarray, y: np.ndarray) -> float:
        logits = self.logits(self.hidden(tf.constant(x)))
        return float(np.mean(np.argmax(np.asarray(logits), axis=1) == y))


def weights(model: Classifier) -> list[np.ndarray]:
    """The model's variables as arrays, in a fixed order."""
    return [np.asarray(v) for v in (model.hidden.kernel, model.hidden.bias, model.logits.kernel,
                                    model.logits.bias, model.running.mean)]
