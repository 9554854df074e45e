"""Helpers of test_mixed_precision.py, and its multi-tower case (run in the device pool's worker
process, which imports this module by its plain name)."""
from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

from trainstack.inputs import StagingInput
from trainstack.loop import Callback
from trainstack.towers import (
    SyncMultiGPUTrainerParameterServer,
    SyncMultiGPUTrainerReplicated,
    TrainConfig,
    launch_train_with_config,
)


def fp32_logits(classifier):
    """``classifier`` computing its cost in float32 (as Keras recommends under mixed_float16);
    its float16 logits are the tensor ``fp16_logits``."""
    class Model(classifier):
        def build_graph(self, x, label):
            logits = tf.cast(self.fc(x), tf.float32)
            tf.identity(self.fc(x), name="fp16_logits")
            return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=label, logits=logits),
                                  name="cost")
    return Model


class _StartWeights(Callback):
    """Records the model's weights when training starts (they are made during set-up)."""

    def __init__(self, model) -> None:
        self.model = model
        self.weights: list = []

    def _before_train(self) -> None:
        self.weights = [np.array(w.numpy()) for w in self.model.fc.weights]


def multi_tower_trains_in_float16_like_float32(devices):
    """(runs in a process with several CPU devices) Replicated and ParameterServer with 2 towers
    and ``mixed_precision=True`` in the constructor, trained the way users do
    (``launch_train_with_config`` with ``dataflow=``, so the default QueueInput + StagingInput):
    the optimizer scales the loss, the variables stay float32, and the weights after 3 steps are
    those of the same trainer in float32 up to float16 rounding. Returns ``{trainer name: (max
    weight difference, how far it trained)}``."""
    from conftest import TinyClassifier, make_dataflow  # noqa: PLC0415 - the worker's path

    batches = make_dataflow(6, seed=5)
    results = {}
    for trainer_cls in (SyncMultiGPUTrainerReplicated, SyncMultiGPUTrainerParameterServer):
        weights, start = {}, None
        for policy in ("mixed_float16", "float32"):
            keras.config.set_dtype_policy(policy)
            try:
                keras.utils.set_random_seed(0)
                model = fp32_logits(TinyClassifier)()
                trainer = trainer_cls(devices[:2], mixed_precision=policy == "mixed_float16")
                start = _StartWeights(model)
                launch_train_with_config(TrainConfig(model=model, dataflow=batches, callbacks=[start], monitors=[],
                                                     steps_per_epoch=3, max_epoch=1), trainer)
                assert isinstance(trainer.input, StagingInput), trainer.input
                assert isinstance(trainer.optimizer, keras.optimizers.LossScaleOptimizer) == trainer.mixed_precision
                assert all(w.dtype == "float32" for w in model.fc.weights)
                weights[policy] = [np.array(w.numpy()) for w in model.fc.weights]
            finally:
                keras.config.set_dtype_policy("float32")
        diff = max(float(np.abs(a - b).max()) for a, b in zip(weights["mixed_float16"], weights["float32"]))
        moved = max(float(np.abs(a - b).max()) for a, b in zip(weights["float32"], start.weights))
        results[trainer_cls.__name__] = (diff, moved)
    return results
