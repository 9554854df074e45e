"""HorovodTrainer (2 ranks over Gloo) x every input, through launch_train_with_config.

One horovodrun of ``matrix_job.py`` trains every input kind in turn; each test
checks one kind's result on both ranks (see matrix_job.py). Skipped without
Horovod: build it with ``python scripts/install_horovod.py``.
"""
from __future__ import annotations

import sys

import pytest

pytest.importorskip("horovod.tensorflow", exc_type=ImportError,
                    reason="Horovod is not installed (or not importable): run scripts/install_horovod.py")

import matrix_results as results  # noqa: E402


@pytest.fixture(scope="module")
def out(once_per_session):
    def make(out):
        n = results.NUM_PROCESSES
        results.run_job([sys.executable, "-c", "from horovod.runner.launch import run_commandline; "
                         "run_commandline()", "-np", str(n), "-H", f"localhost:{n}", "--gloo",
                         sys.executable, str(results.JOB), "horovod"], out)

    return once_per_session("horovod_matrix", make)


@pytest.mark.parametrize("input_kind", results.RESULTS)
def test_each_rank_trains_on_its_own_batch_in_order(out, input_kind):
    results.check(out, input_kind)
