"""Cases of ``test_tf1_optimizers.py`` that need several devices (run in ``multigpu_cases``' worker).

The worker imports this module by name (this folder is on its ``sys.path``); each case
takes the worker's device names first.
"""
from __future__ import annotations

from typing import Any

import numpy as np


def replicated_equals_simple(devices: list[str], optimizer: str) -> dict[str, Any]:
    """A TF1 optimizer trained by SimpleTrainer, and by SyncMultiGPUTrainerReplicated on two
    devices whose towers get the same batch (so the averaged gradient is the single one):
    the largest weight difference, and whether every optimizer variable is the same on both
    devices."""
    import keras
    import tensorflow as tf

    from trainstack.tensorpack.tf1 import ModelDesc, SimpleTrainer, SyncMultiGPUTrainerReplicated, tfv1
    from trainstack.towers import TrainConfig, launch_train_with_config

    makers = {"adam": lambda: tfv1.train.AdamOptimizer(0.05),
              "nesterov": lambda: tfv1.train.MomentumOptimizer(0.05, 0.9, use_nesterov=True),
              "rmsprop": lambda: tfv1.train.RMSPropOptimizer(0.01, momentum=0.5, centered=True)}

    class Regression(ModelDesc):
        def __init__(self):
            self.fc = keras.layers.Dense(1, kernel_initializer="ones")

        def inputs(self):
            return [tf.TensorSpec([None, 3], tf.float32, "x"), tf.TensorSpec([None], tf.float32, "y")]

        def build_graph(self, x, y):
            return tf.reduce_mean(tf.square(self.fc(x)[:, 0] - y), name="cost")

        def optimizer(self):
            return makers[optimizer]()

    rng = np.random.default_rng(0)
    data = [(rng.normal(size=(8, 3)).astype("float32"), rng.normal(size=8).astype("float32")) for _ in range(4)]
    twice = [batch for batch in data for _ in range(2)]  # tower 0 and tower 1 get the same batch
    weights, same_on_devices = [], True
    for trainer, dataflow in [(SimpleTrainer(), data), (SyncMultiGPUTrainerReplicated(devices[:2]), twice)]:
        model = Regression()
        launch_train_with_config(TrainConfig(model=model, dataflow=dataflow, max_epoch=2, steps_per_epoch=4,
                                             callbacks=[], extra_callbacks=[], monitors=[]), trainer)
        weights.append(model.fc.kernel.numpy())
        if isinstance(trainer, SyncMultiGPUTrainerReplicated):
            for var in trainer.optimizer.variables:
                copies = [c.numpy() for c in trainer.strategy.experimental_local_results(var.value)]
                same_on_devices &= len(copies) == 2 and np.array_equal(copies[0], copies[1])
            stand_in = type(trainer.optimizer).__name__
    return {"max_diff": float(np.abs(weights[0] - weights[1]).max()), "same_on_devices": same_on_devices,
            "stand_in": stand_in}
