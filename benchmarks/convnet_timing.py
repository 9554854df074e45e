"""What the training benchmarks time: a small convnet (28x28x1 images, 10 classes, SGD with
momentum) trained on constant batches, and a clock of its steps.

The benchmarks import it (``from convnet_timing import time_training``: a script's folder is
on ``sys.path``) only after any device set-up that must precede TensorFlow's start.
"""
from __future__ import annotations

import time
from typing import Any

import keras
import tensorflow as tf

from trainstack.inputs import DummyConstantInput
from trainstack.loop import Callback
from trainstack.towers import ModelDesc


class ConvNet(ModelDesc):
    def __init__(self) -> None:
        self.conv1 = keras.layers.Conv2D(16, 3, padding="same", activation="relu")
        self.conv2 = keras.layers.Conv2D(32, 3, strides=2, padding="same", activation="relu")
        self.pool = keras.layers.GlobalAveragePooling2D()
        self.fc = keras.layers.Dense(10)

    def inputs(self):
        return [tf.TensorSpec([None, 28, 28, 1], tf.float32, "image"), tf.TensorSpec([None], tf.int32, "label")]

    def build_graph(self, image, label):
        logits = self.fc(self.pool(self.conv2(self.conv1(image))))
        return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=label, logits=logits),
                              name="cost")

    def optimizer(self):
        return keras.optimizers.SGD(0.01, momentum=0.9)


class StepClock(Callback):
    """The time after each step, on every process."""

    _chief_only = False

    def __init__(self) -> None:
        self.times: list[float] = []

    def _trigger_step(self) -> None:
        self.times.append(time.perf_counter())


def time_training(trainer: Any, batch: int, warmup: int, steps: int) -> float:
    """Train the convnet with ``trainer`` (per-tower batches of ``batch``) for ``warmup + steps``
    steps; the seconds the last ``steps`` took."""
    model = ConvNet()
    trainer.setup_graph(model.get_input_signature(), DummyConstantInput([[batch, 28, 28, 1], [batch]]),
                        model.build_graph, model.get_optimizer)
    clock = StepClock()
    trainer.train([clock], [], steps_per_epoch=warmup + steps, max_epoch=1)
    return clock.times[-1] - clock.times[warmup - 1]
