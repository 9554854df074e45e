"""The towers tests' tiny classifier, its dataflows and fixtures, in one module that both
``tests/towers/conftest.py`` and ``tests/tensorpack/conftest.py`` import (each puts this folder on
``sys.path``); the conftest files re-export them, which is what registers the fixtures and keeps
``from conftest import TinyClassifier`` working in worker processes. See
``tests/towers/conftest.py`` for what each is."""
from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from trainstack.callbacks import add_moving_summary
from trainstack.towers import ModelDesc, get_current_tower_context

NUM_FEATURES = 4


class TinyClassifier(ModelDesc):
    """Logistic regression on 4 features, 2 classes (see the module docstring)."""

    def __init__(self, learning_rate: float = 0.5, moving_summary: bool = True) -> None:
        self.fc = keras.layers.Dense(2)
        self.learning_rate = learning_rate
        self.moving_summary = moving_summary
        self.contexts: list = []  # (name, is_training) of every tower built (tests read it)

    def inputs(self):
        return [tf.TensorSpec([None, NUM_FEATURES], tf.float32, "x"),
                tf.TensorSpec([None], tf.int32, "label")]

    def build_graph(self, x, label):
        ctx = get_current_tower_context()
        self.contexts.append((ctx.name, ctx.is_training))
        logits = tf.identity(self.fc(x), name="logits")
        cost = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=label, logits=logits), name="cost")
        correct = tf.equal(tf.argmax(logits, axis=1, output_type=tf.int32), label)
        tf.identity(tf.reduce_mean(tf.cast(correct, tf.float32)), name="accuracy")
        if self.moving_summary:
            add_moving_summary(cost)
        return cost

    def optimizer(self):
        return keras.optimizers.SGD(self.learning_rate)


def make_dataflow(n: int = 10, batch: int = 16, seed: int = 0) -> list:
    """``n`` batches ``(x float32 [batch, 4], label int32 [batch])`` of two separable blobs."""
    rng = np.random.default_rng(seed)
    batches = []
    for _ in range(n):
        label = rng.integers(0, 2, size=batch).astype("int32")
        x = (rng.normal(size=(batch, NUM_FEATURES)) + 2.0 * label[:, None]).astype("float32")
        batches.append((x, label))
    return batches


def setup_trainer(trainer, model, input, opt_fn=None):
    """``trainer.setup_graph`` with the model's signature and tower function; returns the trainer."""
    trainer.setup_graph(model.get_input_signature(), input, model.build_graph,
                        opt_fn or model.get_optimizer)
    return trainer


@pytest.fixture
def classifier():
    return TinyClassifier


@pytest.fixture
def setup():
    return setup_trainer


@pytest.fixture
def model():
    return TinyClassifier()


@pytest.fixture
def dataflow():
    return make_dataflow()


@pytest.fixture
def make_df():
    return make_dataflow


@pytest.fixture(scope="session")
def cpus():
    import multigpu_cases  # noqa: PLC0415

    return multigpu_cases.device_pool("cpu")
