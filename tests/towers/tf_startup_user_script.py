"""A user's script, as the docs teach it: trainstack imported first, an InferenceRunner over a
dataflow and a QueueInput, through launch_train_with_config. Run by test_tf_startup_output.py."""
from trainstack.dataflow import BatchData, DataFromList
from trainstack.inputs import QueueInput
from trainstack.towers import (
    InferenceRunner,
    ModelDesc,
    ScalarStats,
    SimpleTrainer,
    TrainConfig,
    launch_train_with_config,
)

# isort: split

import keras
import numpy as np
import tensorflow as tf


class Linear(ModelDesc):
    def __init__(self) -> None:
        self.dense = keras.layers.Dense(1)

    def inputs(self):
        return [tf.TensorSpec([None, 3], tf.float32, "x"), tf.TensorSpec([None], tf.float32, "y")]

    def build_graph(self, x, y):
        return tf.reduce_mean(tf.square(self.dense(x)[:, 0] - y), name="cost")

    def optimizer(self):
        return keras.optimizers.SGD(0.01)


rng = np.random.default_rng(0)
data = [[rng.normal(size=3).astype("float32"), np.float32(1.0)] for _ in range(64)]
print("user: training", flush=True)
launch_train_with_config(TrainConfig(
    model=Linear(), data=QueueInput(BatchData(DataFromList(data, shuffle=False), 8), queue_size=4),
    callbacks=[InferenceRunner(BatchData(DataFromList(data[:16], shuffle=False), 8), [ScalarStats("cost")])],
    max_epoch=2, steps_per_epoch=8), SimpleTrainer())
print("user: done", flush=True)
