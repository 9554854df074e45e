"""SIGTERM and Ctrl-C during training: a checkpoint of that very step, stats flushed, the
signal's exit status; resuming continues from that step; a second Ctrl-C exits at once, with 130."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from trainstack.callbacks import load_loop_state

SCRIPT = textwrap.dedent("""
    import os, signal, sys, time
    sys.path.insert(0, {towers_tests!r})
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
    from conftest import TinyClassifier, make_dataflow
    from trainstack.callbacks import JSONWriter, ModelSaver, set_logger_dir
    from trainstack.loop import Callback
    from trainstack.towers import AutoResumeTrainConfig, SimpleTrainer, launch_train_with_config

    class SignalAt(Callback):
        def __init__(self, step, signals):
            self.step, self.signals = step, signals
        def _trigger_step(self):
            if self.global_step == self.step:
                with open(os.path.join({logdir!r}, "sent"), "w") as f:
                    f.write(str(time.time()))
                for sig in self.signals:
                    os.kill(os.getpid(), sig)

    set_logger_dir({logdir!r}, action="k")
    callbacks = [ModelSaver()]
    if {kill_step} is not None:
        callbacks.append(SignalAt({kill_step}, {signals}))
    config = AutoResumeTrainConfig(model=TinyClassifier(), dataflow=make_dataflow(10), callbacks=callbacks,
                                   steps_per_epoch=10, max_epoch=2, monitors=[JSONWriter()])
    launch_train_with_config(config, SimpleTrainer())
""")

TOWERS_TESTS = os.path.dirname(os.path.abspath(__file__))


def run(logdir, kill_step=None, signals=(signal.SIGTERM,)):
    code = SCRIPT.format(towers_tests=TOWERS_TESTS, logdir=str(logdir), kill_step=kill_step,
                         signals=[int(s) for s in signals])
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    return proc, time.time()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_saves_that_step_flushes_and_exits_with_its_status_then_resume_continues(tmp_path, sig):
    proc, ended = run(tmp_path, kill_step=13, signals=(sig,))
    assert proc.returncode == 128 + sig, proc.stderr[-3000:]
    name = signal.Signals(sig).name
    assert f"interrupted by {name} after global step 13" in proc.stderr, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    # sent from a callback after step 13 counted itself: no message may speak of a step 14
    assert f"{name} received: training stops before its next step starts" in proc.stderr
    assert set(re.findall(r"global step (\d+)", proc.stderr)) == {"13"}, proc.stderr[-3000:]
    assert "Model saved to" in proc.stderr and "model-13." in proc.stderr
    # the hint for a second signal is the one that applies to this signal
    assert ("Ctrl-C again to exit at once" in proc.stderr) == (sig == signal.SIGINT)
    if sig == signal.SIGTERM:
        assert "a second SIGTERM or SIGINT exits at once, losing the steps since the last checkpoint" in proc.stderr
    # a checkpoint of that very step (mid-epoch 2), with the loop state to resume right after it
    state = load_loop_state(str(tmp_path))
    assert (state["global_step"], state["epoch_num"], state["local_step"]) == (13, 2, 2)
    assert os.path.exists(tmp_path / "model-13.index")
    stats = [json.loads(line) for line in (tmp_path / "stats.jsonl").read_text().splitlines()]
    assert stats and stats[-1]["global_step"] == 10  # epoch 1's stats were written and flushed
    sent = float((tmp_path / "sent").read_text())
    assert ended - sent < 60  # the measured time from signal to exit is in the closing note

    resumed, _ = run(tmp_path)  # AutoResumeTrainConfig: from model-13 to the end
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert load_loop_state(str(tmp_path))["global_step"] == 20
    assert "Epoch 2 (global_step 20) finished" in resumed.stderr  # it went on in epoch 2
    assert "Epoch 1 (global_step" not in resumed.stderr


def test_a_second_ctrl_c_exits_at_once_with_status_130(tmp_path):
    proc, _ = run(tmp_path, kill_step=13, signals=(signal.SIGINT, signal.SIGINT))
    assert proc.returncode == 130, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    # model-10 is the last checkpoint (epoch 1's); no graceful save of step 13: it exited at once
    assert ("A second signal (SIGINT): exiting at once with status 130, without after_train. Lost: the 3 "
            f"step(s) finished since the last checkpoint ({tmp_path / 'model-10'}, global step 10") in proc.stderr
    assert not os.path.exists(tmp_path / "model-13.index")
    assert load_loop_state(str(tmp_path))["global_step"] == 10


def test_in_process_except_exception_catches_the_interrupt_with_the_checkpoint_of_that_step(model, make_df,
                                                                                            tmp_path):
    """A sweep or notebook around launch_train_with_config catches the stop with `except Exception`
    (it is no SystemExit), and the checkpoint of the interrupted step is there."""
    from trainstack.callbacks import ModelSaver
    from trainstack.loop import Callback, TrainingInterrupted
    from trainstack.towers import SimpleTrainer, TrainConfig, launch_train_with_config

    class SigtermAt(Callback):
        def _trigger_step(self):
            if self.global_step == 13:
                os.kill(os.getpid(), signal.SIGTERM)

    config = TrainConfig(model=model, dataflow=make_df(10), steps_per_epoch=10, max_epoch=2, monitors=[],
                         callbacks=[ModelSaver(checkpoint_dir=str(tmp_path)), SigtermAt()])
    caught = None
    try:
        launch_train_with_config(config, SimpleTrainer())
    except Exception as e:  # noqa: BLE001 - what a sweep writes
        caught = e
    assert isinstance(caught, TrainingInterrupted) and not isinstance(caught, SystemExit)
    assert (caught.exit_code, caught.global_step) == (143, 13)
    assert os.path.exists(tmp_path / "model-13.index")
