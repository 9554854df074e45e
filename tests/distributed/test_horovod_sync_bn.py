"""``BatchNorm(sync_statistics='horovod')`` under HorovodTrainer with 2 processes on localhost over Gloo, started
by horovodrun (issue 24): each rank, given its own half of the batch, normalizes by the statistics of the whole
batch (NumPy on the two halves concatenated), and the ranks' moving averages are equal (the ones those
statistics give). Skipped without Horovod: build it with ``python scripts/install_horovod.py``."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("horovod.tensorflow", exc_type=ImportError,
                    reason="Horovod is not installed (or not importable): run scripts/install_horovod.py")

JOB = Path(__file__).with_name("hvd_sync_bn_job.py")
_spec = importlib.util.spec_from_file_location("hvd_sync_bn_job", JOB)
job = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(job)

JOB_ENV = {"TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": ""}  # quiet TF; ranks on the CPU
EPSILON, MOMENTUM = 1e-5, 0.9  # tensorpack's BatchNorm defaults


def test_sync_statistics_horovod_normalizes_each_half_by_the_whole_batch(tmp_path):
    cmd = [sys.executable, "-c", "from horovod.runner.launch import run_commandline; run_commandline()",
           "-np", "2", "-H", "localhost:2", "--gloo", "--gloo-timeout-seconds", "30",
           sys.executable, str(JOB), "--out", str(tmp_path)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=240, env={**os.environ, **JOB_ENV})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    ranks = [dict(np.load(tmp_path / f"rank{r}.npz")) for r in range(2)]

    mean_ema, variance_ema = np.zeros(3), np.ones(3)
    for step, batch in enumerate(job.global_batches()):
        whole = batch.astype("float64")
        mean, variance = whole.mean(axis=(0, 1, 2)), whole.var(axis=(0, 1, 2))  # the whole batch's, biased
        expected = (whole - mean) / np.sqrt(variance + EPSILON)
        for r, got in enumerate(ranks):
            np.testing.assert_allclose(got[f"out_{step}"], expected[r * job.HALF:(r + 1) * job.HALF],
                                       rtol=1e-4, atol=1e-4, err_msg=f"rank {r}, step {step}")
            half = whole[r * job.HALF:(r + 1) * job.HALF]  # not what its own half's statistics would give
            own = (half - half.mean(axis=(0, 1, 2))) / np.sqrt(half.var(axis=(0, 1, 2)) + EPSILON)
            assert not np.allclose(got[f"out_{step}"], own, atol=0.1)
        mean_ema = mean_ema - (mean_ema - mean) * (1 - MOMENTUM)
        variance_ema = variance_ema - (variance_ema - variance) * (1 - MOMENTUM)

    # both ranks updated their moving averages from the same all-reduced statistics
    np.testing.assert_array_equal(ranks[0]["mean_ema"], ranks[1]["mean_ema"])
    np.testing.assert_array_equal(ranks[0]["variance_ema"], ranks[1]["variance_ema"])
    np.testing.assert_allclose(ranks[0]["mean_ema"], mean_ema, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ranks[0]["variance_ema"], variance_ema, rtol=1e-5, atol=1e-5)
