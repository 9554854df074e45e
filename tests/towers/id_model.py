"""A model and a callback shared by the dataflow pipeline tests (test_dataflow_pipeline.py, and
test_tensorpack_dataflow.py's subprocess, which puts this folder on ``sys.path``)."""
from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

from trainstack.loop import Callback
from trainstack.towers import ModelDesc


class IdClassifier(ModelDesc):
    """Logistic regression on ``x``; names the batch's example ids ``"ids"`` for callbacks."""

    def __init__(self) -> None:
        self.fc = keras.layers.Dense(2)

    def inputs(self):
        return [tf.TensorSpec([None, 4], tf.float32, "x"), tf.TensorSpec([None], tf.int32, "label"),
                tf.TensorSpec([None], tf.int64, "id")]

    def build_graph(self, x, label, ids):
        tf.identity(ids, name="ids")
        logits = self.fc(x)
        return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=label, logits=logits),
                              name="cost")

    def optimizer(self):
        return keras.optimizers.SGD(0.5)


class BatchRecorder(Callback):
    """The ids and the cost of every step, by epoch."""

    def __init__(self):
        self.ids, self.costs = {}, []

    def _before_run(self, ctx):
        return ["ids", "cost"]

    def _after_run(self, ctx, values):
        ids, cost = values.results
        self.ids.setdefault(self.epoch_num, []).extend(np.asarray(ids).tolist())
        self.costs.append(float(cost))
