"""The multi-GPU tests on real GPUs (skipped on machines without one).

Runs the equivalence, replica and input cases of the other test_multigpu_*
files on the GPUs, in a worker process: every GPU, or two logical GPUs of
4 GiB on a machine with one.
"""
from __future__ import annotations

import multigpu_cases as cases
import pytest
import tensorflow as tf

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not tf.config.list_physical_devices("GPU"),
                                                  reason="needs a GPU; this machine has none")]


def test_the_trainers_on_gpus():
    report = cases.device_pool("gpu").run(cases.gpu_suite)
    print(report)
