"""A Keras model through ModelDesc.from_keras on DistributedTrainerReplicated, 2 local worker
processes (``python -m trainstack.distributed.launch -n 2 mw_keras_job.py``): the first step
equals SimpleTrainer on the two workers' first batches concatenated (within mw_model's
RTOL/ATOL), both workers end with the same weights, and the chief's checkpoint gives an
OfflinePredictor the trained model's outputs."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from mw_model import ATOL, RTOL, first_batches, make_data  # noqa: E402

JOB = os.path.join(HERE, "mw_keras_job.py")


@pytest.fixture(scope="module")
def run(once_per_session) -> str:
    def launch(out) -> None:
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONUNBUFFERED="1")
        env.pop("TF_CONFIG", None)
        proc = subprocess.run([sys.executable, "-m", "trainstack.distributed.launch", "-n", "2", "--timeout",
                               "150", JOB, "--out", str(out)], env=env, capture_output=True, text=True, timeout=200)
        assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
        assert "[worker0] worker0 done, chief=True, step=6" in proc.stdout
        assert "[worker1] worker1 done, chief=False, step=6" in proc.stdout

    return str(once_per_session("multiworker_keras_run", launch))


def _load(out: str, name: str) -> list[np.ndarray]:
    with np.load(os.path.join(out, f"{name}.npz")) as f:
        return [f[f"arr_{i}"] for i in range(len(f.files))]


def test_first_step_equals_one_process_on_both_batches_and_workers_agree(run: str) -> None:
    import keras
    import tensorflow as tf

    from trainstack.towers import ModelDesc, SimpleTrainer, TrainConfig, launch_train_with_config

    init, step1 = _load(run, "worker0_init"), _load(run, "worker0_step1")
    for a, b in zip(_load(run, "worker1_init"), init):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(_load(run, "worker1_final"), _load(run, "worker0_final")):
        np.testing.assert_array_equal(a, b)
    x = keras.Input((8,), name="x")
    model = keras.Model(x, keras.layers.Dense(3)(keras.layers.Dense(16, activation="tanh")(x)))
    for w, v in zip(model.weights, init):
        w.assign(v)
    desc = ModelDesc.from_keras(model, keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                                keras.optimizers.SGD(0.1))
    launch_train_with_config(TrainConfig(model=desc, dataflow=[list(first_batches(2))], max_epoch=1,
                                         callbacks=[], monitors=[]), SimpleTrainer())
    assert max(np.abs(a - b).max() for a, b in zip(step1, init)) > 1e-3
    for got, want in zip(step1, [w.numpy() for w in model.weights]):
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
    assert tf.train.latest_checkpoint(os.path.join(run, "worker0")).endswith("model-6")


def test_the_chiefs_checkpoint_predicts_what_the_trained_model_does(run: str) -> None:
    import keras

    from trainstack.towers import ModelDesc, OfflinePredictor, PredictConfig

    final = _load(run, "worker0_final")
    x = make_data(5, seed=3)[0]
    trained = keras.Input((8,), name="x")
    trained = keras.Model(trained, keras.layers.Dense(3)(keras.layers.Dense(16, activation="tanh")(trained)))
    for w, v in zip(trained.weights, final):
        w.assign(v)
    fresh_in = keras.Input((8,), name="x")
    fresh = keras.Model(fresh_in, keras.layers.Dense(3)(keras.layers.Dense(16, activation="tanh")(fresh_in)))
    config = PredictConfig(model=ModelDesc.from_keras(fresh, "sparse_categorical_crossentropy", "sgd"),
                           session_init=os.path.join(run, "worker0"), input_names=["x"], output_names=["output"])
    np.testing.assert_allclose(OfflinePredictor(config)(x)[0], np.asarray(trained(x)), rtol=1e-6, atol=1e-6)
