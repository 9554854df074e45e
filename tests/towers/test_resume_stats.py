"""Resumed statistics (issue 34): a run stopped after epoch 2 and resumed with
AutoResumeTrainConfig writes, for every later epoch, the stats.jsonl values of the run never
stopped, as its weights are (test_exact_resume.py).

What makes that hold: ModelSaver's checkpoints hold the monitors' state next to the weights and
the loop state: the moving averages of add_moving_summary (the ``cost`` of TinyClassifier) and
StatMonitorParamSetter's history, here one value short of a learning-rate decay at the resume
point, so that the decay comes at epoch 3 in both runs, and the monitors' latest scalars (the
setter, before the default MovingAverageSummary, reads the previous epoch's cost). ModelSaver
comes first, as in tensorpack's examples: its epoch-end checkpoint is written once the epoch's
other callbacks have run.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent("""
    import sys
    sys.path.insert(0, {towers_tests!r})
    import keras
    from conftest import TinyClassifier, make_dataflow
    from trainstack.callbacks import JSONWriter, ModelSaver, StatMonitorParamSetter, set_logger_dir
    from trainstack.towers import AutoResumeTrainConfig, SimpleTrainer, launch_train_with_config

    keras.utils.set_random_seed(1)
    set_logger_dir({logdir!r}, action="k")
    # the setter reads the cost of the previous epoch (MovingAverageSummary, a default callback,
    # puts it after the user's callbacks): 2 values at the end of epoch 3, none improving by
    # 100, so the learning rate halves there
    decay = StatMonitorParamSetter("learning_rate", "cost", lambda lr: lr * 0.5, threshold=100.0, last_k=2)
    config = AutoResumeTrainConfig(
        model=TinyClassifier(learning_rate=0.1), dataflow=make_dataflow(5), callbacks=[ModelSaver(), decay],
        monitors=[JSONWriter()], steps_per_epoch=5, max_epoch={max_epoch})
    launch_train_with_config(config, SimpleTrainer())
""")
TOWERS_TESTS = os.path.dirname(os.path.abspath(__file__))
RESUME_AFTER, MAX_EPOCH = 2, 4


def start(logdir, max_epoch):
    code = SCRIPT.format(towers_tests=TOWERS_TESTS, logdir=str(logdir), max_epoch=max_epoch)
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    return subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)


def finish(proc):
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-3000:]
    return err


def epoch_records(logdir):
    """epoch -> the line JSONWriter wrote at that epoch's end (the last one naming the epoch)."""
    with open(logdir / "stats.jsonl", encoding="utf-8") as f:
        return {r["epoch_num"]: r for r in map(json.loads, f)}


def test_a_resumed_run_writes_the_stats_of_the_uninterrupted_run(tmp_path):
    whole, split = tmp_path / "whole", tmp_path / "split"
    reference = start(whole, MAX_EPOCH)
    first = start(split, RESUME_AFTER)  # both at once: two processes, two cores
    finish(first)
    finish(reference)
    log = finish(start(split, MAX_EPOCH))

    expected, got = epoch_records(whole), epoch_records(split)
    later = range(RESUME_AFTER + 1, MAX_EPOCH + 1)
    assert sorted(expected) == sorted(got) == list(range(MAX_EPOCH + 1))
    # the run tests something: the decay happens after the resume point, the cost is averaged
    assert expected[3]["learning_rate"] == pytest.approx(0.05)
    assert all("cost" in expected[e] for e in later)
    for epoch in later:
        assert sorted(got[epoch]) == sorted(expected[epoch]), (epoch, got[epoch], expected[epoch])
        for key, value in expected[epoch].items():
            assert got[epoch][key] == pytest.approx(value, rel=1e-6, abs=0), (
                f"epoch {epoch}: {key} is {got[epoch][key]} after the resume, {value} in the "
                "uninterrupted run")
    assert f"resuming from {split}" in log and "restored the monitors' state" in log, log[-3000:]
