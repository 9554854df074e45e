"""A step that never returns, through launch_train_with_config: a second Ctrl-C ends the process at
once (status 130, the steps since the last checkpoint named as lost, that checkpoint intact), and
StepWatchdog ends the run itself (status 1, every thread's Python stack in the log).

Each run is a subprocess whose step 5 blocks in a ``tf.py_function`` that sleeps for 10 minutes (the
main thread waits inside TensorFlow's C++ code, where Python runs no signal handler); epoch 1 has 3
steps, so ModelSaver has written model-3 when step 5 blocks."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import tensorflow as tf

from trainstack.callbacks import load_loop_state
from trainstack.inputs import FeedInput
from trainstack.towers import SimpleTrainer, SmartInit

TOWERS_TESTS = os.path.dirname(os.path.abspath(__file__))

SCRIPT = textwrap.dedent("""
    import os, sys, time
    sys.path.insert(0, {towers_tests!r})
    import numpy as np
    import tensorflow as tf
    from conftest import TinyClassifier, make_dataflow
    from trainstack.callbacks import ModelSaver, set_logger_dir
    from trainstack.loop import Callback, StepWatchdog
    from trainstack.towers import SimpleTrainer, TrainConfig, launch_train_with_config

    LOGDIR = {logdir!r}
    calls = []

    def block():
        calls.append(1)
        if len(calls) == 5:  # the fifth step: block for good, after saying so
            open(os.path.join(LOGDIR, "blocked"), "w").close()
            time.sleep(600)
        return np.float32(0.0)

    class BlockingClassifier(TinyClassifier):
        def build_graph(self, x, label):
            cost = super().build_graph(x, label)
            return cost + tf.reshape(tf.py_function(block, [], tf.float32), [])

    class KeepWeightsAt3(Callback):
        def _trigger_step(self):
            if self.global_step == 3:
                np.savez(os.path.join(LOGDIR, "weights-3.npz"), *[v.numpy() for v in model.fc.weights])

    set_logger_dir(LOGDIR, action="k")
    model = BlockingClassifier()
    callbacks = [ModelSaver(), KeepWeightsAt3(), *{watchdog}]
    config = TrainConfig(model=model, dataflow=make_dataflow(3), callbacks=callbacks,
                         steps_per_epoch=3, max_epoch=10)
    launch_train_with_config(config, SimpleTrainer())
""")


def start(logdir, watchdog: str = "[]") -> subprocess.Popen:
    code = SCRIPT.format(towers_tests=TOWERS_TESTS, logdir=str(logdir), watchdog=watchdog)
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})


def wait_for(predicate, proc: subprocess.Popen, what: str, timeout: float = 150) -> None:
    """Wait for an event of the run (a file, a log line); the timeout only keeps a hung test from
    hanging the suite."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if proc.poll() is not None:
            raise AssertionError(f"the run ended (status {proc.returncode}) before {what}:\n"
                                 + proc.stdout.read()[-3000:])
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"no {what} within {timeout} s:\n" + proc.communicate()[0][-3000:])
        time.sleep(0.05)


def finish(proc: subprocess.Popen, timeout: float = 60) -> str:
    try:
        return proc.communicate(timeout=timeout)[0]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def assert_model_3_intact_and_restorable(logdir, model, setup, dataflow) -> None:
    """The latest checkpoint is model-3, and restoring it into a new trainer gives step 3's weights."""
    latest = tf.train.latest_checkpoint(str(logdir))
    assert latest is not None and latest.endswith("model-3"), latest
    assert load_loop_state(str(logdir))["global_step"] == 3
    trainer = setup(SimpleTrainer(), model, FeedInput(dataflow))
    before = [v.numpy() for v in model.fc.weights]
    SmartInit(latest).init(trainer)
    with np.load(os.path.join(logdir, "weights-3.npz")) as f:
        expected = [f[k] for k in f.files]
    restored = [v.numpy() for v in model.fc.weights]
    assert len(restored) == len(expected) == 2  # the Dense layer's kernel and bias
    for got, want, old in zip(restored, expected, before):
        np.testing.assert_array_equal(got, want)
        assert not np.array_equal(got, old)


def test_a_second_ctrl_c_during_a_blocked_step_exits_130_and_keeps_the_last_checkpoint(tmp_path, model, setup,
                                                                                      dataflow):
    proc = start(tmp_path)
    try:
        wait_for(lambda: os.path.exists(tmp_path / "blocked"), proc, "blocked step")
        proc.send_signal(signal.SIGINT)
        log = tmp_path / "log.log"
        # the handler cannot run while the step blocks: the watcher thread says so
        wait_for(lambda: "received while training is blocked" in log.read_text(), proc, "first-signal notice")
        proc.send_signal(signal.SIGINT)
        output = finish(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, output[-3000:]
    assert "Ctrl-C again to exit at once, losing the steps since the last checkpoint" in output
    lost = [line for line in output.splitlines() if "A second signal (SIGINT)" in line]
    assert len(lost) == 1, output[-3000:]
    assert "exiting at once with status 130" in lost[0]
    assert f"the 1 step(s) finished since the last checkpoint ({tmp_path / 'model-3'}, global step 3" in lost[0]
    assert "Traceback" not in output
    assert_model_3_intact_and_restorable(tmp_path, model, setup, dataflow)


def test_the_watchdog_ends_a_blocked_step_with_every_thread_stack(tmp_path, model, setup, dataflow):
    proc = start(tmp_path, watchdog="[StepWatchdog(5, first_step_timeout_s=120, grace_s=1)]")
    output = finish(proc, timeout=200)
    assert proc.returncode == 1, output[-3000:]
    assert "StepWatchdog(5 s): global step 5 (epoch 2) has not finished after 5 s, the limit." in output
    # the stacks of every thread: the main thread waits in the step, the py_function sleeps in block()
    assert "Thread 0x" in output and "[MainThread] (most recent call first)" in output, output[-3000:]
    assert 'in block' in output and "in run_step" in output
    assert "exiting at once with status 1, without after_train" in output
    assert f"Lost: the 1 step(s) finished since the last checkpoint ({tmp_path / 'model-3'}" in output
    assert_model_3_intact_and_restorable(tmp_path, model, setup, dataflow)
