"""What the main job (examples/digits_convnet.py, the README's `<!-- main-job -->`) prints.

A user sees the run and where its results are, and nothing alarming: none of
TensorFlow's C++ start-up messages (the oneDNN notice, "Could not find cuda
drivers", absl's pre-initialisation banner, a "failed call to cuInit" error on a
machine without a GPU), which trainstack leaves out when it imports TensorFlow, and no
"RunUpdateOps does nothing" note from the default callbacks. With ``--verbose``
(``TRAINSTACK_TF_LOGS=1``) all of those come back (the note at DEBUG).
"""
from __future__ import annotations

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


def test_the_library_filter_leaves_out_only_tensorflows_known_start_up_lines():
    """The filter trainstack applies when it imports TensorFlow, line by line: the known
    start-up lines go, errors and every other line stay (the main job relies on it)."""
    from trainstack.callbacks.tf_startup import is_startup_line

    banner = "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\n"
    onednn = "I0000 00:00:1795636910.445867   10531 port.cc:153] oneDNN custom operations are on. You may see\n"
    drivers = ("I0000 00:00:1795636910.445867   10531 cudart_stub.cc:31] Could not find cuda drivers on your "
               "machine, GPU will not be used.\n")
    guard = ("I0000 00:00:1795786758.445289   22369 cpu_feature_guard.cc:227] This TensorFlow binary is "
             "optimized to use available CPU instructions in performance-critical operations.\n")
    guard_2 = "To enable the following instructions: AVX2 FMA, in other operations, rebuild TensorFlow.\n"
    cuinit = ("E0000 00:00:1795636913.997988   10531 cuda_platform.cc:52] failed call to cuInit: INTERNAL: "
              "CUDA error: Failed call to cuInit: UNKNOWN ERROR (303)\n")
    other_info = "I0000 00:00:1795636910.445867   10531 x.cc:1] something else to know\n"
    error = "E0000 00:00:1795636913.997988   10531 op_kernel.cc:9] a real error\n"
    python_warning = "/x/y.py:3: UserWarning: a Python warning\n"
    assert [is_startup_line(x) for x in (banner, onednn, drivers, guard)] == [True] * 4
    assert is_startup_line(guard_2, previous=guard) and not is_startup_line(guard_2, previous=other_info)
    # cuInit's failure is left out only where no CUDA driver was found (it then says no more)
    assert is_startup_line(cuinit, no_driver=True) and not is_startup_line(cuinit)
    assert not any(is_startup_line(x, no_driver=True) for x in (other_info, error, python_warning))
