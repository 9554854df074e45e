"""What the main job (examples/digits_convnet.py, the README's `<!-- main-job -->`) prints.

A user sees the run and where its results are, and nothing alarming: none of
TensorFlow's C++ start-up messages (the oneDNN notice, "Could not find cuda
drivers", absl's pre-initialisation banner, a "failed call to cuInit" error on a
machine without a GPU) and no "RunUpdateOps does nothing" note from the default
callbacks. With ``--verbose`` all of those come back (the note at DEBUG).
"""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAIN_JOB = ROOT / "examples" / "digits_convnet.py"
# the lines the quiet run must not print, and what each one is
UNWANTED = {
    "cudart_stub": "TensorFlow's 'Could not find cuda drivers' start-up line",
    "cuInit": "CUDA's 'failed call to cuInit' error",
    "oneDNN": "TensorFlow's oneDNN notice",
    "absl::InitializeLog": "absl's banner before TensorFlow's C++ log lines",
    "does nothing": "RunUpdateOps' note, from the default callbacks",
}
ABSL_LINE = re.compile(r"^[IWEF]\d{4} [\d:.]+ +\d+ \S+:\d+\] ", re.MULTILINE)  # a C++ log line


def run_main_job(logdir: Path, *args: str) -> str:
    """One epoch of the main job; its stdout and stderr together, as a user's terminal shows them."""
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}  # the script's default
    result = subprocess.run([sys.executable, str(MAIN_JOB), "--epochs", "1", "--logdir", str(logdir), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stdout[-4000:]
    return result.stdout


def assert_tells_where_everything_is(out: str, logdir: Path) -> None:
    assert re.search(r"^final validation error: 0\.\d{4} \(\d+ of 500 images wrong\) after 1 epochs", out,
                     re.MULTILINE), out[-2000:]
    assert f"TensorBoard logs: {logdir}" in out, out[-2000:]
    assert f"JSON stats:       {logdir / 'stats.jsonl'}" in out, out[-2000:]
    assert f"checkpoints:      {logdir / 'model-40'} (latest)" in out, out[-2000:]  # 1297 images // 32


@pytest.mark.slow
def test_the_main_job_prints_what_a_user_needs_and_nothing_alarming(tmp_path):
    logdir = tmp_path / "digits"
    out = run_main_job(logdir)
    found = {s: what for s, what in UNWANTED.items() if s in out}
    assert not found, f"the main job printed {sorted(found.values())}:\n{out}"
    assert not ABSL_LINE.search(out), f"a TensorFlow C++ log line got through:\n{out}"
    assert_tells_where_everything_is(out, logdir)
    assert "training on " in out and f"Logger directory: {logdir}" in out


@pytest.mark.slow
def test_verbose_shows_tensorflows_messages_and_the_debug_lines(tmp_path):
    logdir = tmp_path / "digits"
    out = run_main_job(logdir, "--verbose")
    assert ABSL_LINE.search(out), f"no TensorFlow C++ log line with --verbose:\n{out}"
    assert "RunUpdateOps does nothing in TF2" in out, out
    assert_tells_where_everything_is(out, logdir)


def test_the_filter_leaves_out_only_the_start_up_chatter_below_the_level():
    """The main job's filter, line by line: what TF_CPP_MIN_LOG_LEVEL should have silenced goes,
    errors and Python's own lines stay, and level 0 keeps everything."""
    spec = importlib.util.spec_from_file_location("quiet_startup_under_test", MAIN_JOB.parent / "quiet_startup.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    chatter = module.startup_chatter
    banner = "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\n"
    info = "I0000 00:00:1795636910.445867   10531 port.cc:153] oneDNN custom operations are on.\n"
    warning = "W0000 00:00:1795636910.445867   10531 x.cc:1] something to know\n"
    cuinit = ("E0000 00:00:1795636913.997988   10531 cuda_platform.cc:52] failed call to cuInit: INTERNAL: "
              "CUDA error: Failed call to cuInit: UNKNOWN ERROR (303)\n")
    error = "E0000 00:00:1795636913.997988   10531 op_kernel.cc:9] a real error\n"
    python_warning = "/x/y.py:3: UserWarning: a Python warning\n"
    assert [chatter(x, 2) for x in (banner, info, warning, cuinit, error, python_warning)] == [
        True, True, True, True, False, False]
    assert [chatter(x, 1) for x in (info, warning, error)] == [True, False, False]
    assert not any(chatter(x, 0) for x in (banner, info, warning, cuinit, error, python_warning))
