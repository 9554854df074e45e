"""A Keras model through ModelDesc.from_keras on HorovodTrainer, 2 ranks on localhost over Gloo
(horovodrun): the broadcast gives rank 1 rank 0's Keras weights, the first step equals
SimpleTrainer on both ranks' first batches concatenated, and the ranks end equal. Skipped
without Horovod: build it with ``python scripts/install_horovod.py``."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("horovod.tensorflow", exc_type=ImportError,
                    reason="Horovod is not installed (or not importable): run scripts/install_horovod.py")

sys.path.insert(0, str(Path(__file__).parent))

from hvd_job import make_batches  # noqa: E402
from hvd_keras_job import adapt, keras_classifier  # noqa: E402

from trainstack.towers import SimpleTrainer, TrainConfig, launch_train_with_config  # noqa: E402

JOB = Path(__file__).with_name("hvd_keras_job.py")
RTOL, ATOL = 1e-5, 1e-6


@pytest.fixture(scope="module")
def run(once_per_session) -> Path:
    def make(out: Path) -> None:
        cmd = [sys.executable, "-c", "from horovod.runner.launch import run_commandline; run_commandline()",
               "-np", "2", "-H", "localhost:2", "--gloo", "--gloo-timeout-seconds", "20",
               sys.executable, str(JOB), "--out", str(out)]
        env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": ""}
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180, env=env)
        assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]

    return once_per_session("hvd_keras_run", make)


def rank_weights(out: Path, rank: int, what: str) -> list[np.ndarray]:
    with np.load(out / f"rank{rank}.npz") as f:
        return [f[f"{what}_{i}"] for i in range(4)]


def test_broadcast_first_step_and_end_of_a_keras_model_on_two_ranks(run) -> None:
    for what in ("init", "final"):
        for a, b in zip(rank_weights(run, 0, what), rank_weights(run, 1, what)):
            np.testing.assert_array_equal(a, b)
    init, step1 = rank_weights(run, 0, "init"), rank_weights(run, 0, "step1")
    model = keras_classifier()
    for w, v in zip(model.weights, init):
        w.assign(v)
    batches = make_batches(8)
    both = [np.concatenate([batches[0][0], batches[1][0]]), np.concatenate([batches[0][1], batches[1][1]])]
    launch_train_with_config(TrainConfig(model=adapt(model), dataflow=[both], max_epoch=1, callbacks=[],
                                         monitors=[]), SimpleTrainer())
    assert max(np.abs(a - b).max() for a, b in zip(step1, init)) > 1e-3
    for got, want in zip(step1, [w.numpy() for w in model.weights]):
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
