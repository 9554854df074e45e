"""Running ``matrix_job.py`` and reading its per-input results, for the two matrix tests."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
JOB = HERE / "matrix_job.py"
sys.path.insert(0, str(HERE.parent / "towers"))

import matrix_cases  # noqa: E402

INPUTS = matrix_cases.INPUTS
#: inputs also run with steps_per_run=2 (3 steps in calls of 2 and 1); their results are "<kind>.spr2"
STEPS_PER_RUN_INPUTS = ["dataflow", "dataset", "staging-queue"]
RESULTS = [*INPUTS, *(f"{kind}.spr2" for kind in STEPS_PER_RUN_INPUTS)]
NUM_PROCESSES = 2
ENV = {"TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": "", "PYTHONUNBUFFERED": "1"}


def run_job(cmd: list[str], out: Path, timeout: float = 400) -> None:
    """Run the job's command (``cmd`` ends with the job's trainer argument) once: every input, then
    STEPS_PER_RUN_INPUTS again with steps_per_run=2; the output goes to ``out/job.log``. The
    per-input results are checked by the tests (a failing input makes the job exit non-zero,
    which is fine here)."""
    env = {**os.environ, **ENV}
    env.pop("TF_CONFIG", None)
    with open(out / "job.log", "w") as log:
        subprocess.run([*cmd, "--out", str(out), "--steps-per-run-inputs", ",".join(STEPS_PER_RUN_INPUTS)],
                       env=env, stdout=log, stderr=subprocess.STDOUT, timeout=timeout, check=False)


def check(out: Path, input_kind: str) -> None:
    """Every process ran ``input_kind`` and its checks passed."""
    for rank in range(NUM_PROCESSES):
        path = out / f"{input_kind}.rank{rank}.json"
        assert path.exists(), f"no result from rank {rank}; see {out / 'job.log'}:\n" + \
            (out / "job.log").read_text()[-3000:]
        result = json.loads(path.read_text())
        assert result["ok"], f"rank {rank}: {result['error']}\n{result['trace']}"
