"""Models written with tensorpack's layer functions, as its examples write them, and the same
models in Keras layers; run in-process or in the multi-device worker (see multigpu_cases.py).

- :class:`MnistLike`: examples/basics/mnist-convnet.py's model code on 8x8x1 images (argscope,
  LinearWrap, Dropout, regularize_cost('fc.*/W'), add_param_summary('.*/W')), one convolution
  with cifar-convnet.py's ``activation=BNReLU``;
- :class:`LayerModel` / :class:`KerasModel`: conv (no bias) -> BatchNorm -> relu -> max pool ->
  fully connected, the first in layer functions, the second in Keras layers, from the same
  weights (:data:`WEIGHTS`, by tensorpack's names: what a tensorpack ``.npz`` holds).
"""
from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

from trainstack.callbacks import add_moving_summary
from trainstack.tensorpack.tf1 import (
    BatchNorm,
    BNReLU,
    Conv2D,
    FullyConnected,
    LinearWrap,
    MaxPooling,
    ModelDesc,
    SimpleTrainer,
    SyncMultiGPUTrainerReplicated,
    add_param_summary,
    argscope,
    l2_regularizer,
    regularize_cost,
)
from trainstack.towers import SmartInit, TrainConfig, launch_train_with_config

SIG = [tf.TensorSpec([None, 8, 8, 1], tf.float32, "input"), tf.TensorSpec([None], tf.int32, "label")]

_rng = np.random.default_rng(11)
#: the weights of LayerModel / KerasModel, by tensorpack's variable names
WEIGHTS = {
    "conv0/W": _rng.normal(size=(3, 3, 1, 4)).astype("float32") * 0.5,
    "bn0/gamma": _rng.uniform(0.5, 1.5, size=4).astype("float32"),
    "bn0/beta": _rng.normal(size=4).astype("float32") * 0.1,
    "bn0/mean/EMA": _rng.normal(size=4).astype("float32") * 0.1,
    "bn0/variance/EMA": _rng.uniform(0.5, 2.0, size=4).astype("float32"),
    "fc0/W": _rng.normal(size=(64, 3)).astype("float32") * 0.3,
    "fc0/b": np.array([0.1, -0.1, 0.0], "float32"),
}
LAYER_NAMES = list(WEIGHTS)


def batches(n: int = 4, batch: int = 8, seed: int = 5) -> list:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        label = rng.integers(0, 3, size=batch).astype("int32")
        image = rng.normal(size=(batch, 8, 8, 1)).astype("float32") + label[:, None, None, None]
        out.append((image, label))
    return out


def cross_entropy(logits, label):
    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=label, logits=logits),
                          name="cross_entropy_loss")


class MnistLike(ModelDesc):
    """examples/basics/mnist-convnet.py's build_graph, shrunk."""

    def inputs(self):
        return SIG

    def build_graph(self, image, label):
        image = image * 2 - 1
        with argscope(Conv2D, kernel_size=3, activation=tf.nn.relu, filters=8):
            logits = (LinearWrap(image)
                      .Conv2D("conv0")
                      .MaxPooling("pool0", 2)
                      .Conv2D("conv1", activation=BNReLU)
                      .MaxPooling("pool1", 2)
                      .FullyConnected("fc0", 16, activation=tf.nn.relu)
                      .Dropout("dropout", rate=0.5)
                      .FullyConnected("fc1", 3)())
        tf.identity(logits, name="logits")
        cost = cross_entropy(logits, label)
        wd_cost = regularize_cost("fc.*/W", l2_regularizer(1e-5), name="regularize_loss")
        add_moving_summary(cost, wd_cost)
        add_param_summary((".*/W", ["histogram", "rms"]))
        return tf.add_n([cost, wd_cost], name="total_cost")

    def optimizer(self):
        return keras.optimizers.Adam(1e-2)


class LayerModel(ModelDesc):
    """conv -> BatchNorm -> relu -> max pool -> fc, in tensorpack's layer functions (``sync``: SyncBN)."""

    def __init__(self, sync: bool = False):
        self.sync = sync

    def inputs(self):
        return SIG

    def build_graph(self, image, label):
        x = Conv2D("conv0", image, 4, 3, use_bias=False)
        x = tf.nn.relu(BatchNorm("bn0", x, sync_statistics="nccl" if self.sync else None))
        x = MaxPooling("pool0", x, 2)
        logits = tf.identity(FullyConnected("fc0", x, 3), name="logits")
        return cross_entropy(logits, label)

    def optimizer(self):
        return keras.optimizers.SGD(0.1)


class KerasModel(ModelDesc):
    """LayerModel in Keras layers, from :data:`WEIGHTS`."""

    def __init__(self, sync: bool = False):
        c = keras.initializers.Constant
        self.conv0 = keras.layers.Conv2D(4, 3, padding="same", use_bias=False, kernel_initializer=c(WEIGHTS["conv0/W"]))
        self.bn0 = keras.layers.BatchNormalization(
            momentum=0.9, epsilon=1e-5, synchronized=sync, gamma_initializer=c(WEIGHTS["bn0/gamma"]),
            beta_initializer=c(WEIGHTS["bn0/beta"]), moving_mean_initializer=c(WEIGHTS["bn0/mean/EMA"]),
            moving_variance_initializer=c(WEIGHTS["bn0/variance/EMA"]))
        self.fc0 = keras.layers.Dense(3, kernel_initializer=c(WEIGHTS["fc0/W"]), bias_initializer=c(WEIGHTS["fc0/b"]))

    def inputs(self):
        return SIG

    def build_graph(self, image, label):
        x = tf.nn.relu(self.bn0(self.conv0(image), training=self.training))
        x = tf.nn.max_pool2d(x, 2, 2, "VALID")
        logits = tf.identity(self.fc0(tf.reshape(x, [-1, 64])), name="logits")
        return cross_entropy(logits, label)

    def optimizer(self):
        return keras.optimizers.SGD(0.1)

    def weights(self) -> dict:
        """The weights by tensorpack's names."""
        return {"conv0/W": self.conv0.kernel, "bn0/gamma": self.bn0.gamma, "bn0/beta": self.bn0.beta,
                "bn0/mean/EMA": self.bn0.moving_mean, "bn0/variance/EMA": self.bn0.moving_variance,
                "fc0/W": self.fc0.kernel, "fc0/b": self.fc0.bias}


def value(v) -> np.ndarray:
    """A variable's value (a mirrored variable's first copy)."""
    return np.array(tf.convert_to_tensor(v))


def train(model, towers: int = 1, session_init=None, callbacks=(), extra=(), epochs: int = 2):
    """The trainer, after ``epochs`` epochs of 2 steps (per tower)."""
    trainer = SimpleTrainer() if towers == 1 else SyncMultiGPUTrainerReplicated(towers)
    launch_train_with_config(TrainConfig(model=model, dataflow=batches(2 * towers), max_epoch=epochs,
                                         steps_per_epoch=2, callbacks=list(callbacks), extra_callbacks=list(extra),
                                         monitors=[], session_init=session_init), trainer)
    return trainer


def trained_pair(npz_path: str, towers: int = 1, sync: bool = False) -> tuple[dict, dict]:
    """(LayerModel's weights loaded from the .npz at ``npz_path``, KerasModel's), after training."""
    trainer = train(LayerModel(sync), towers, session_init=SmartInit(npz_path))
    layer = {v.name.split(":")[0]: value(v) for v in trainer.tower_func.variables}
    keras_model = KerasModel(sync)
    train(keras_model, towers)
    return layer, {k: value(v) for k, v in keras_model.weights().items()}


def two_towers_case(devices, npz_path):
    """The mnist-like model trains on 2 towers; LayerModel and KerasModel train alike on 2 towers."""
    trainer = train(MnistLike(), towers=2)
    names = [v.name.split(":")[0] for v in trainer.tower_func.variables]
    copies = {v.name.split(":")[0]: [np.array(c) for c in v.values] for v in trainer.tower_func.variables
              if "EMA" in v.name}
    layer, keras_weights = trained_pair(npz_path, towers=2)
    return names, copies, layer, keras_weights


def sync_bn_case(devices, npz_path):
    """LayerModel with SyncBN and KerasModel with synchronized BatchNormalization, on 2 towers."""
    return trained_pair(npz_path, towers=2, sync=True)
