"""A tensorpack-tutorial model (tf.compat.v1.get_variable under variable_scopes) and the same model
in Keras layers, trained from the same weights; runs in-process or in the multi-device worker
(see multigpu_cases.py)."""
from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

from trainstack.callbacks import ModelSaver
from trainstack.tensorpack.tf1 import ModelDesc, SimpleTrainer, SyncMultiGPUTrainerReplicated
from trainstack.towers import TrainConfig, launch_train_with_config

RNG = np.random.default_rng(7)
W0 = RNG.normal(size=(4, 8)).astype("float32") * 0.5
B0 = np.full(8, 0.1, "float32")
W1 = RNG.normal(size=(8, 2)).astype("float32") * 0.5
B1 = np.zeros(2, "float32")
SIG = [tf.TensorSpec([None, 4], tf.float32, "x"), tf.TensorSpec([None], tf.int32, "label")]


def batches(n=6, batch=8):
    rng = np.random.default_rng(3)
    out = []
    for _ in range(n):
        label = rng.integers(0, 2, size=batch).astype("int32")
        out.append((rng.normal(size=(batch, 4)).astype("float32") + label[:, None], label))
    return out


class TF1Model(ModelDesc):
    """Written as tensorpack's tutorial teaches: variables by tf.get_variable under variable scopes."""

    def inputs(self):
        return SIG

    def build_graph(self, x, label):
        with tf.compat.v1.variable_scope("fc0"):
            w = tf.compat.v1.get_variable("W", initializer=W0)
            b = tf.compat.v1.get_variable("b", [8], initializer=tf.compat.v1.constant_initializer(0.1))
            h = tf.nn.relu(tf.matmul(x, w) + b)
        with tf.compat.v1.variable_scope("fc1"):
            w = tf.compat.v1.get_variable("W", initializer=W1)
            b = tf.compat.v1.get_variable("b", [2], initializer=tf.compat.v1.zeros_initializer())
            logits = tf.identity(tf.matmul(h, w) + b, name="logits")
        return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=label, logits=logits))

    def optimizer(self):
        return keras.optimizers.SGD(0.1)


class KerasModel(ModelDesc):
    def __init__(self):
        self.fc0 = keras.layers.Dense(8, activation="relu", name="fc0",
                                      kernel_initializer=keras.initializers.Constant(W0),
                                      bias_initializer=keras.initializers.Constant(B0))
        self.fc1 = keras.layers.Dense(2, name="fc1", kernel_initializer=keras.initializers.Constant(W1),
                                      bias_initializer=keras.initializers.Constant(B1))

    def inputs(self):
        return SIG

    def build_graph(self, x, label):
        logits = self.fc1(self.fc0(x))
        return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=label, logits=logits))

    def optimizer(self):
        return keras.optimizers.SGD(0.1)


def train(model, towers=1, logdir=None):
    """The trained weights, in layer order (W0, b0, W1, b1)."""
    trainer = SimpleTrainer() if towers == 1 else SyncMultiGPUTrainerReplicated(towers)
    callbacks = [ModelSaver(checkpoint_dir=logdir)] if logdir else []
    launch_train_with_config(TrainConfig(model=model, dataflow=batches(), max_epoch=2, callbacks=callbacks,
                                         monitors=[], steps_per_epoch=6 // towers), trainer)
    variables = trainer.tower_func.checkpoint_module.variables
    return [np.array(tf.convert_to_tensor(v)) for v in variables], [v.name for v in variables]


def two_towers_case(devices):
    tf1_weights, names = train(TF1Model(), towers=2)
    keras_weights, _ = train(KerasModel(), towers=2)
    return tf1_weights, keras_weights, names
