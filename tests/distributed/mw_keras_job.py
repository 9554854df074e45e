"""A Keras model (ModelDesc.from_keras) trained by DistributedTrainerReplicated, one process per task.

    python -m trainstack.distributed.launch -n 2 tests/distributed/mw_keras_job.py --out DIR

Each worker trains :func:`keras_classifier` on its shard of mw_model's data through
``launch_train_with_config`` (a dataflow of batches) and writes the Keras model's weights
before training, after the first step and at the end to ``DIR/<task>_{init,step1,final}.npz``.
"""
from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from trainstack.distributed import DistributedTrainerReplicated  # noqa: E402

# the strategy is made before TensorFlow runs any op
trainer = DistributedTrainerReplicated(timeout_seconds=20)

import keras  # noqa: E402
import numpy as np  # noqa: E402
from mw_model import BATCH, LEARNING_RATE, NUM_CLASSES, NUM_FEATURES, make_data, shard  # noqa: E402

from trainstack.callbacks import ModelSaver, set_logger_dir  # noqa: E402
from trainstack.loop import Callback  # noqa: E402
from trainstack.towers import ModelDesc, TrainConfig, launch_train_with_config  # noqa: E402


def keras_classifier() -> keras.Model:
    """mw_model's classifier as a functional Keras model (seeded initializers)."""
    x = keras.Input((NUM_FEATURES,), name="x")
    h = keras.layers.Dense(16, activation="tanh", kernel_initializer=keras.initializers.GlorotUniform(seed=1))(x)
    return keras.Model(x, keras.layers.Dense(NUM_CLASSES, kernel_initializer=keras.initializers.GlorotUniform(
        seed=2))(h))


def adapt(model: keras.Model) -> ModelDesc:
    return ModelDesc.from_keras(model, keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                                keras.optimizers.SGD(LEARNING_RATE), metrics=["accuracy"])


class RecordWeights(Callback):
    """Save the Keras model's weights before training, after step 1 and at the end (every worker)."""

    _chief_only = False

    def __init__(self, model: keras.Model, prefix: str) -> None:
        self.model, self.prefix = model, prefix

    def _save(self, what: str) -> None:
        np.savez(f"{self.prefix}_{what}.npz", *[w.numpy() for w in self.model.weights])

    def _before_train(self) -> None:
        self._save("init")

    def _trigger_step(self) -> None:
        if self.global_step == 1:
            self._save("step1")

    def _after_train(self) -> None:
        self._save("final")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=6)
    args = parser.parse_args()
    spec = trainer.cluster_spec
    x, y = shard(*make_data(), spec.task_index, trainer.num_workers)
    batches = [[x[i:i + BATCH], y[i:i + BATCH]] for i in range(0, args.steps * BATCH, BATCH)]
    model = keras_classifier()
    set_logger_dir(os.path.join(args.out, spec.task_name), action="d")
    prefix = os.path.join(args.out, spec.task_name)
    launch_train_with_config(TrainConfig(model=adapt(model), dataflow=batches, max_epoch=1,
                                         callbacks=[ModelSaver(), RecordWeights(model, prefix)]), trainer)
    print(f"{spec.task_name} done, chief={trainer.is_chief}, step={trainer.global_step}", flush=True)


if __name__ == "__main__":
    main()
