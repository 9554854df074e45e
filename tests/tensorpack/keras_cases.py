"""tensorpack's ``contrib.keras.KerasModel`` on a small Keras model, in-process or in the multi-device
worker (see multigpu_cases.py): a functional model of two ``Dense`` layers from fixed weights (the
first with an L2 ``kernel_regularizer``), one-hot targets, ``categorical_crossentropy`` and
``categorical_accuracy``, a TF1 ``GradientDescentOptimizer`` as tensorpack's scripts pass it.
"""
from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

from trainstack.dataflow import DataFromList
from trainstack.inputs import FeedInput
from trainstack.tensorpack.contrib.keras import KerasModel
from trainstack.tensorpack.tf1 import (
    SimpleTrainer,
    SyncMultiGPUTrainerParameterServer,
    SyncMultiGPUTrainerReplicated,
    tfv1,
)

_rng = np.random.default_rng(3)
W1 = _rng.normal(size=(4, 8)).astype("float32") * 0.5
W2 = _rng.normal(size=(8, 3)).astype("float32") * 0.5
#: the class of x is argmax(x @ TRUTH)
TRUTH = _rng.normal(size=(4, 3)).astype("float32")
L2 = 1e-2
INPUTS = [tf.TensorSpec([None, 4], tf.float32, "x")]
TARGETS = [tf.TensorSpec([None, 3], tf.float32, "onehot")]


def get_model(x):
    """tensorpack's ``get_model``: a Keras model on the inputs it is given."""
    hidden = keras.layers.Dense(8, activation="relu", kernel_initializer=keras.initializers.Constant(W1),
                                kernel_regularizer=keras.regularizers.l2(L2), name="hidden")(x)
    out = keras.layers.Dense(3, activation="softmax", kernel_initializer=keras.initializers.Constant(W2),
                             name="out")(hidden)
    return keras.Model(x, out)


def batches(n: int, batch: int, seed: int = 7) -> list:
    """``n`` batches ``[x, onehot]`` of ``batch`` datapoints."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        x = rng.normal(size=(batch, 4)).astype("float32")
        out.append([x, np.eye(3, dtype="float32")[np.argmax(x @ TRUTH, axis=1)]])
    return out


def concatenated(parts: list, k: int) -> list:
    """Every ``k`` consecutive batches as one."""
    return [[np.concatenate([b[i] for b in parts[j:j + k]]) for i in range(2)] for j in range(0, len(parts), k)]


def train(trainer, data: list, steps: int, validation: list | None = None, **fit):
    """KerasModel(get_model) compiled and fitted on ``data`` (one epoch of ``steps`` steps); the model."""
    model = KerasModel(get_model, input_signature=INPUTS, target_signature=TARGETS,
                       input=FeedInput(DataFromList(data, shuffle=False)), trainer=trainer)
    model.compile(optimizer=tfv1.train.GradientDescentOptimizer(0.5), loss="categorical_crossentropy",
                  metrics="categorical_accuracy")
    model.fit(validation_data=None if validation is None else DataFromList(validation, shuffle=False),
              steps_per_epoch=steps, max_epoch=1, **fit)
    return model


def weights(model) -> dict:
    """The Keras model's weights, by path."""
    keras_model = model.trainer.tower_func.owner.model
    return {w.path: np.array(tf.convert_to_tensor(w.value)) for w in keras_model.weights}


STATS = ("total_loss", "categorical_crossentropy", "regularize_cost")


def towers_case(devices, steps: int = 3, batch: int = 8) -> dict:
    """Trained on 2 towers (each its own ``batch``) by tensorpack's default multi-GPU trainer for a
    KerasModel (parameter server) and by the replicated one, and on 1 tower with the two towers' batches
    joined: each one's weights and moving averages of the losses."""
    parts = batches(2 * steps, batch)
    out = {}
    for name, trainer in (("single", SimpleTrainer()), ("ps", SyncMultiGPUTrainerParameterServer(2)),
                          ("replicated", SyncMultiGPUTrainerReplicated(2))):
        data = concatenated(parts, 2) if name == "single" else parts
        model = train(trainer, data, steps, monitors=[])
        out[name] = {"weights": weights(model),
                     "stats": {s: model.trainer.monitors.get_latest(s) for s in (*STATS, "categorical_accuracy")}}
    return out


BN_MOMENTUM = 0.5


def get_bn_model(x):
    """A Keras model whose first layer is a BatchNormalization of the input itself."""
    normalized = keras.layers.BatchNormalization(momentum=BN_MOMENTUM, name="bn")(x)
    out = keras.layers.Dense(3, activation="softmax", kernel_initializer=keras.initializers.Constant(W2[:4]),
                             name="out")(normalized)
    return keras.Model(x, out)


def bn_towers_case(devices, steps: int = 3, batch: int = 8) -> dict:
    """A BatchNormalization model trained on 2 towers by both multi-GPU trainers: its moving mean, and
    the moving means that the main tower's batches alone and every tower's batches would give."""
    parts = batches(2 * steps, batch)
    out = {}
    for name, trainer in (("ps", SyncMultiGPUTrainerParameterServer(2)), ("replicated", SyncMultiGPUTrainerReplicated(2))):
        model = KerasModel(get_bn_model, input_signature=INPUTS, target_signature=TARGETS,
                           input=FeedInput(DataFromList(parts, shuffle=False)), trainer=trainer)
        model.compile(optimizer=tfv1.train.GradientDescentOptimizer(0.1), loss="categorical_crossentropy")
        model.fit(steps_per_epoch=steps, max_epoch=1, monitors=[])
        out[name] = weights(model)["bn/moving_mean"]
    main, every = np.zeros(4), np.zeros(4)
    for s in range(steps):
        main = BN_MOMENTUM * main + (1 - BN_MOMENTUM) * parts[2 * s][0].mean(0)
        for k in range(2):
            every = BN_MOMENTUM * every + (1 - BN_MOMENTUM) * parts[2 * s + k][0].mean(0)
    out["main_tower_only"], out["every_tower"] = main, every
    return out
