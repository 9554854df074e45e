"""``BatchNorm(sync_statistics='horovod')`` under a trainer without worker processes (issue 24): a clear error
naming HorovodTrainer and the alternatives, raised when the tower is built (the 2-process run:
tests/distributed/test_horovod_sync_bn.py)."""
from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from trainstack.tensorpack.tf1 import BatchNorm, ModelDesc, SimpleTrainer
from trainstack.towers import TrainConfig, launch_train_with_config


class SyncBN(ModelDesc):
    def inputs(self):
        return [tf.TensorSpec([None, 2, 2, 3], tf.float32, "x")]

    def build_graph(self, x):
        return tf.reduce_mean(BatchNorm("bn", x, sync_statistics="horovod"), name="cost")

    def optimizer(self):
        return keras.optimizers.SGD(0.1)


def test_sync_statistics_horovod_under_another_trainer_names_horovod_trainer():
    data = [(np.ones((2, 2, 2, 3), "float32"),)]
    with pytest.raises(ValueError, match=r"BatchNorm\('bn'\): sync_statistics='horovod' needs HorovodTrainer.*"
                                         r"tower 'tower0'.*sync_statistics='nccl'"):
        launch_train_with_config(TrainConfig(model=SyncBN(), dataflow=data, max_epoch=1, steps_per_epoch=1,
                                             monitors=[]), SimpleTrainer())
