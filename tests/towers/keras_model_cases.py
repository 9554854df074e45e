"""The Keras models of the ``ModelDesc.from_keras`` tests, and their multi-tower cases.

A plain module (not a test file): the multi-device worker of ``multigpu_cases`` imports
it by name, and ``test_keras_model.py`` builds the same models in the pytest process.
Every initializer has its own seed, so two builds of a model start from the same weights.
"""
from __future__ import annotations

from typing import Any

import numpy as np

NUM_FEATURES, NUM_CLASSES = 4, 3
#: relative and absolute tolerance of "the same SGD step" (float32 sums in another order)
RTOL, ATOL = 1e-5, 1e-6


def _init(seed: int) -> Any:
    import keras

    return keras.initializers.GlorotUniform(seed=seed)


def functional(dropout: float = 0.0, l2: float = 0.0) -> Any:
    """Input ``x`` [None, 4] -> Dense(6, tanh, optional L2) -> [Dropout] -> Dense(3) logits."""
    import keras

    x = keras.Input((NUM_FEATURES,), name="x")
    h = keras.layers.Dense(6, activation="tanh", kernel_initializer=_init(1),
                           kernel_regularizer=keras.regularizers.L2(l2) if l2 else None)(x)
    if dropout:
        h = keras.layers.Dropout(dropout, seed=3)(h)
    return keras.Model(x, keras.layers.Dense(NUM_CLASSES, kernel_initializer=_init(2))(h))


def subclassed() -> Any:
    """The functional model's layers as a subclassed model (inputs unknown to Keras)."""
    import keras

    class Classifier(keras.Model):
        def __init__(self) -> None:
            super().__init__()
            self.hidden = keras.layers.Dense(6, activation="tanh", kernel_initializer=_init(1))
            self.logits = keras.layers.Dense(NUM_CLASSES, kernel_initializer=_init(2))

        def call(self, x: Any, training: bool = False) -> Any:
            return self.logits(self.hidden(x))

    return Classifier()


def make_model(kind: str) -> Any:
    return functional() if kind == "functional" else subclassed()


def adapt(model: Any, learning_rate: float = 0.1, **kwargs: Any) -> Any:
    """``ModelDesc.from_keras`` with a sparse cross-entropy on logits, SGD and the accuracy."""
    import keras
    import tensorflow as tf

    from trainstack.towers import ModelDesc

    if not getattr(model, "inputs", None) and "inputs" not in kwargs:
        kwargs["inputs"] = [tf.TensorSpec([None, NUM_FEATURES], tf.float32, "x")]
    return ModelDesc.from_keras(model, keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                                keras.optimizers.SGD(learning_rate), metrics=["accuracy"], **kwargs)


def make_batches(n: int, batch: int = 8, seed: int = 0) -> list:
    """``n`` batches ``[x float32 [batch, 4], label int32 [batch]]`` of a 3-class problem."""
    rng = np.random.default_rng(seed)
    w = np.random.default_rng(99).normal(size=(NUM_FEATURES, NUM_CLASSES))
    out = []
    for _ in range(n):
        x = rng.normal(size=(batch, NUM_FEATURES)).astype("float32")
        out.append([x, np.argmax(x @ w, axis=1).astype("int32")])
    return out


def concat_pairs(batches: list) -> list:
    """Batches ``2s`` and ``2s+1`` as one batch: what two towers take in step ``s``."""
    return [[np.concatenate([a[0], b[0]]), np.concatenate([a[1], b[1]])]
            for a, b in zip(batches[0::2], batches[1::2])]


def weights(model: Any) -> list[np.ndarray]:
    return [np.array(w.numpy()) for w in model.weights]


def initial_weights(kind: str) -> list[np.ndarray]:
    """The weights a new model of ``kind`` starts from (a subclassed one built by a call)."""
    model = make_model(kind)
    model(np.zeros((1, NUM_FEATURES), "float32"))
    return weights(model)


def train(model: Any, trainer: Any, batches: list, steps: int, **config: Any) -> Any:
    """``launch_train_with_config`` of the adapted model on ``batches`` (``dataflow=``), one epoch
    of ``steps`` steps, no callbacks or monitors; returns the trainer."""
    from trainstack.towers import TrainConfig, launch_train_with_config

    launch_train_with_config(TrainConfig(model=adapt(model), dataflow=batches, steps_per_epoch=steps,
                                         max_epoch=1, callbacks=[], monitors=[], **config), trainer)
    return trainer


# -- cases run in the worker with several devices -----------------------------------------------
def two_towers_equal_one_on_both_batches(devices: list[str], trainer_name: str, kind: str) -> float:
    """Two towers of ``trainer_name`` on batches of 8 for 3 steps end with the weights of
    SimpleTrainer on the concatenated batches of 16; returns how far the weights moved."""
    import trainstack.towers as towers

    batches = make_batches(6)
    reference = make_model(kind)
    train(reference, towers.SimpleTrainer(), concat_pairs(batches), 3)
    model = make_model(kind)
    before = initial_weights(kind)
    trainer = train(model, getattr(towers, trainer_name)(devices[:2]), batches, 3)
    assert trainer.num_towers == 2
    for got, want in zip(weights(model), weights(reference)):
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
    return max(float(np.abs(a - b).max()) for a, b in zip(weights(model), before))
