"""What a user's own script prints: TensorFlow's start-up lines left out by trainstack (or shown,
with ``TRAINSTACK_TF_LOGS=1``), and no "CANCELLED" line when a QueueInput stops.

The script (tf_startup_user_script.py) runs in a subprocess, its stdout and stderr read whole.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).with_name("tf_startup_user_script.py")
# a C++ log line of TensorFlow, its severity-time-thread prefix cut off: "port.cc:153] oneDNN ..."
ABSL_LINE = re.compile(r"^[IWEF]\d{4} [\d:.]+ +\d+ (\S+:\d+\] .*)$", re.MULTILINE)
BANNER = "WARNING: All log messages before absl::InitializeLog() is called"


def run_user_script(tf_logs: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("TF_CPP_MIN_LOG_LEVEL", "TRAINSTACK_TF_LOGS")}
    if tf_logs is not None:
        env["TRAINSTACK_TF_LOGS"] = tf_logs
    result = subprocess.run([sys.executable, str(SCRIPT)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stdout[-4000:]
    assert result.stdout.index("user: training") < result.stdout.index("user: done"), result.stdout
    return result.stdout


@pytest.mark.slow
def test_a_user_script_prints_no_tensorflow_start_up_line_and_no_cancelled_line():
    out = run_user_script(None)
    assert "validation_cost" in out and "Training has finished" in out, out
    assert BANNER not in out, out
    assert not ABSL_LINE.search(out), f"a TensorFlow C++ log line got through:\n{out}"
    assert "CANCELLED" not in out and "rendezvous" not in out, out


@pytest.mark.slow
def test_trainstack_tf_logs_shows_tensorflows_lines():
    out = run_user_script("1")
    assert BANNER in out and any("oneDNN" in x for x in ABSL_LINE.findall(out)), out
    assert "CANCELLED" not in out, out  # fixed at its cause, not filtered
