"""AsyncMultiGPUTrainer on logical CPU devices: each tower's update is applied.

With plain SGD, K updates of ``lr * g_k / K`` (``scale_gradient=True``) from the
same start are one SimpleTrainer step on the K batches concatenated; without
scaling, one step of ``K * lr``. Tolerance: rtol 1e-5 / atol 1e-6. The optimizer
counts K iterations per step.
"""
from __future__ import annotations

import multigpu_cases as cases
import pytest

ASYNC = "AsyncMultiGPUTrainer"


@pytest.mark.parametrize("towers", [2, 4])
def test_each_tower_applies_its_scaled_update(cpus, towers):
    assert cpus.run(cases.first_step, ASYNC, towers) == towers


def test_without_scaling_each_tower_applies_its_whole_gradient(cpus):
    assert cpus.run(cases.first_step, ASYNC, 2, scale_gradient=False, learning_rate=0.25,
                    reference_rate=0.5) == 2


@pytest.mark.parametrize("input_kind", ["feed", "staging"])
def test_no_batch_reaches_two_towers(cpus, input_kind):
    cpus.run(cases.no_batch_twice, ASYNC, 2, input_kind)
