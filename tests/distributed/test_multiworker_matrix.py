"""DistributedTrainerReplicated (2 worker processes) x every input, through launch_train_with_config.

One launcher run of ``matrix_job.py`` trains every input kind in turn; each
test checks one kind's result on both workers: the weights equal plain SGD on
each step's batches of both workers concatenated, and worker ``r`` got batch
``2s + r`` at step ``s`` (see matrix_job.py).
"""
from __future__ import annotations

import sys

import matrix_results as results
import pytest


@pytest.fixture(scope="module")
def out(once_per_session):
    def make(out):
        results.run_job([sys.executable, "-m", "trainstack.distributed.launch", "-n",
                         str(results.NUM_PROCESSES), "--timeout", "350", str(results.JOB), "multiworker"], out)

    return once_per_session("multiworker_matrix", make)


@pytest.mark.parametrize("input_kind", results.RESULTS)
def test_each_worker_trains_on_its_own_batch_in_order(out, input_kind):
    results.check(out, input_kind)
