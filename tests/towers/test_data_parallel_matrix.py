"""Data parallelism is exact for every trainer and every input (DESIGN.md section 7).

Each case runs ``matrix_cases.matrix_case`` in the worker with 4 logical CPU
devices: ``launch_train_with_config`` with ``dataflow=`` (the default input of
the trainer: FeedInput for SimpleTrainer, QueueInput + StagingInput for the
multi-tower trainers) or ``data=<InputSource>``, 3 steps, then the weights are
compared with plain SGD on each step's batches concatenated, tower 0's batch
with the dataflow's order, and every datapoint is checked to be trained on once.
"""
from __future__ import annotations

import matrix_cases as cases
import pytest

MULTI_TOWER = [spec for spec in cases.TRAINERS if spec != "Simple"]
TRAINERS = [("Simple", 1)] + [(spec, k) for spec in MULTI_TOWER for k in (2, 4)]


@pytest.mark.parametrize("input_kind", cases.INPUTS)
@pytest.mark.parametrize("trainer, towers", TRAINERS, ids=[f"{s}-{k}" for s, k in TRAINERS])
def test_every_trainer_with_every_input_trains_each_tower_on_its_own_batch(cpus, trainer, towers, input_kind):
    result = cpus.run(cases.matrix_case, trainer, towers, input_kind)
    if towers > 1 and input_kind in ("dataflow", "queue", "multiprocess", "remote"):
        # the one-line multi-GPU path prefetches queue-fed inputs onto the devices
        assert result["input"] == "StagingInput", result


@pytest.mark.parametrize("input_kind", ["dataflow", "dataset", "staging-tensor"])
@pytest.mark.parametrize("trainer", ["Simple", "Replicated", "PS-cpu", "Async"])
def test_steps_per_run_keeps_every_tower_on_its_own_batch(cpus, trainer, input_kind):
    # 3 steps in calls of 2 and 1
    cpus.run(cases.matrix_case, trainer, 1 if trainer == "Simple" else 2, input_kind, steps_per_run=2)


@pytest.mark.parametrize("input_kind", ["dataflow", "feed", "staging-queue"])
@pytest.mark.parametrize("trainer", ["Simple", "Replicated", "PS-gpu", "Async"])
def test_accumulated_gradients_equal_one_step_on_the_micro_batches_concatenated(cpus, trainer, input_kind):
    # 3 micro-batches per tower and step: step s trains on batches 6s .. 6s+5 with 2 towers
    cpus.run(cases.matrix_case, trainer, 1 if trainer == "Simple" else 2, input_kind, accumulate=3)
