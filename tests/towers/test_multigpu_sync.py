"""SyncMultiGPUTrainerReplicated (and what both synchronous trainers share) on 4 logical CPU devices.

Each case runs in a worker process with 4 logical CPU devices (multigpu_cases.py).
"The same first SGD step" means: K towers of batch b trained one step give the
weights SimpleTrainer reaches in one step on the K batches concatenated (batch
K*b), from the same start, within rtol 1e-5 / atol 1e-6 (float32 sums in another
order). The model (two Dense layers) has no batch statistics.
"""
from __future__ import annotations

import multigpu_cases as cases
import pytest

REPLICATED = "SyncMultiGPUTrainerReplicated"
PS = "SyncMultiGPUTrainerParameterServer"


@pytest.mark.parametrize("towers, options", [
    (2, {}), (4, {"mode": "hierarchical"}), (2, {"mode": "collective"}), (2, {"mode": "gpu"})])
def test_replicated_takes_the_simple_trainers_first_step(cpus, towers, options):
    assert cpus.run(cases.first_step, REPLICATED, towers, **options) == 1


def test_replicated_sums_without_average(cpus):
    # the sum of K mean gradients is one step of K times the learning rate on the concatenation
    assert cpus.run(cases.first_step, REPLICATED, 4, average=False, learning_rate=0.25,
                    reference_rate=1.0) == 1


def test_replicated_copies_stay_identical(cpus):
    cpus.run(cases.replicas_identical, steps=25)


@pytest.mark.parametrize("trainer, towers, input_kind", [
    (REPLICATED, 2, "feed"), (REPLICATED, 4, "queue"), (PS, 4, "staging")])
def test_no_batch_reaches_two_towers(cpus, trainer, towers, input_kind):
    cpus.run(cases.no_batch_twice, trainer, towers, input_kind)


@pytest.mark.parametrize("broadcast", [True, False])
def test_replicated_broadcasts_tower_updated_variables_each_epoch(cpus, broadcast):
    cpus.run(cases.batch_norm_copies_synced, broadcast)


@pytest.mark.parametrize("trainer, options", [(REPLICATED, {}), (PS, {"ps_device": "gpu"})])
def test_gradient_processors_see_the_averaged_gradients(cpus, trainer, options):
    # GlobalNormClip of the averaged gradients: the same step as SimpleTrainer's clipped one
    assert cpus.run(cases.first_step, trainer, 2, clip=0.05, **options) == 1
