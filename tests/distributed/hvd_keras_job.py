"""A Keras model (ModelDesc.from_keras) trained by HorovodTrainer, one process per rank.

    horovodrun -np 2 -H localhost:2 --gloo python tests/distributed/hvd_keras_job.py --out DIR

Every rank builds the model with its own seed (different initial weights: only the broadcast
makes them equal), trains on its shard of hvd_job's batches through ``launch_train_with_config``
and writes ``DIR/rank<r>.npz``: the Keras model's weights after the broadcast, after step 1 and
at the end.
"""
from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import keras  # noqa: E402
import numpy as np  # noqa: E402
from hvd_job import FEATURES, LEARNING_RATE, make_batches  # noqa: E402

from trainstack.callbacks import ModelSaver, set_logger_dir  # noqa: E402
from trainstack.loop import Callback  # noqa: E402
from trainstack.towers import ModelDesc, TrainConfig, launch_train_with_config  # noqa: E402


def keras_classifier() -> keras.Model:
    x = keras.Input((FEATURES,), name="x")
    return keras.Model(x, keras.layers.Dense(2)(keras.layers.Dense(3, activation="tanh")(x)))


def adapt(model: keras.Model) -> ModelDesc:
    return ModelDesc.from_keras(model, keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                                keras.optimizers.SGD(LEARNING_RATE), metrics=["accuracy"])


class Record(Callback):
    """Every rank: the Keras model's weights after the broadcast, after step 1 and at the end."""

    _chief_only = False

    def __init__(self, model: keras.Model, path: str) -> None:
        self.model, self.path, self.saved = model, path, {}

    def _save(self, what: str) -> None:
        self.saved.update({f"{what}_{i}": w.numpy() for i, w in enumerate(self.model.weights)})

    def _before_train(self) -> None:
        self._save("init")

    def _trigger_step(self) -> None:
        if self.global_step == 1:
            self._save("step1")

    def _after_train(self) -> None:
        self._save("final")
        np.savez(self.path, **self.saved)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    from trainstack.distributed import HorovodTrainer, shard_dataflow  # noqa: PLC0415

    trainer = HorovodTrainer()
    keras.utils.set_random_seed(100 + trainer.rank)
    set_logger_dir(os.path.join(args.out, "logs"), action="k")
    model = keras_classifier()
    data = shard_dataflow(make_batches(8), trainer.rank, trainer.size)
    launch_train_with_config(TrainConfig(model=adapt(model), dataflow=data, max_epoch=2, callbacks=[
        ModelSaver(), Record(model, os.path.join(args.out, f"rank{trainer.rank}.npz"))]), trainer)


if __name__ == "__main__":
    main()
