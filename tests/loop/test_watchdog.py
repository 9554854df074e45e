"""StepWatchdog on the pure-Python loop: a step over its limit ends the run (StepTimeoutError after
every after_train when the step returns in time, else the process exits with status 1 and every
thread's stack); epoch-end callbacks and a first step within its own limit are not stopped; the
thread ends with the run. Runs that may end the process run in a subprocess."""
from __future__ import annotations

import subprocess
import sys
import textwrap
import threading

import pytest

from trainstack.loop import ArgumentError, Callback, SessionRunTimeout, StepWatchdog, Trainer

HEADER = textwrap.dedent("""
    import logging, os, sys, threading
    from trainstack.loop import Callback, StepTimeoutError, StepWatchdog, Trainer

    fired = threading.Event()

    class Fired(logging.Handler):  # what a test waits for: the watchdog's report
        def emit(self, record):
            if "has not finished" in record.getMessage():
                fired.set()

    logging.getLogger("trainstack.loop").addHandler(Fired())

    class AfterTrain(Callback):
        def _after_train(self):
            print("after_train ran", flush=True)
""")


def run_script(body: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", HEADER + textwrap.dedent(body)], capture_output=True,
                          text=True, timeout=120)


def test_arguments_are_checked():
    with pytest.raises(ArgumentError, match=r"StepWatchdog\(timeout_s=...\) must be .*, got 0"):
        StepWatchdog(0)
    with pytest.raises(ArgumentError, match=r"first_step_timeout_s=...\) must be .*, got -1"):
        StepWatchdog(1, first_step_timeout_s=-1)
    with pytest.raises(ArgumentError, match=r"grace_s=...\) must be .*, got -1"):
        StepWatchdog(1, grace_s=-1)


def test_session_run_timeout_is_a_watchdog_in_milliseconds():
    watchdog = SessionRunTimeout(1500)
    assert isinstance(watchdog, StepWatchdog)
    assert watchdog.timeout_s == watchdog.first_step_timeout_s == 1.5
    assert not watchdog.chief_only  # every process of a distributed run watches its own steps
    with pytest.raises(ArgumentError, match=r"SessionRunTimeout\(timeout_in_ms=...\)"):
        SessionRunTimeout(0)


def test_a_step_that_returns_late_raises_step_timeout_error_after_every_after_train():
    proc = run_script("""
        t = Trainer()
        def step():
            if t.global_step == 3:
                assert fired.wait(60)  # returns once the watchdog has reported it
        t.train_op = step
        try:
            t.train([StepWatchdog(0.5, grace_s=60), AfterTrain()], [], steps_per_epoch=3, max_epoch=2)
        except StepTimeoutError as e:
            print("raised:", e.step, e.timeout_s, e)
        print("watchdog threads left:", [th.name for th in threading.enumerate() if "Watchdog" in th.name])
    """)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "raised: 4 0.5 StepWatchdog(0.5 s): global step 4 (epoch 2) has not finished after 0.5 s" in proc.stdout
    assert "after_train ran" in proc.stdout
    assert "watchdog threads left: []" in proc.stdout
    assert "ending the run with status 1: every after_train runs if the step returns within 60 s" in proc.stderr


def test_a_step_that_never_returns_ends_the_process_with_status_1_and_every_thread_stack():
    proc = run_script("""
        class Checkpoints(Callback):  # what a saver says its last checkpoint is
            def last_checkpoint(self):
                return (2, "ckpt-2") if self.global_step >= 2 else None

        def stuck_step():
            if t.global_step == 3:
                threading.Event().wait()
        t = Trainer()
        t.train_op = stuck_step
        t.train([StepWatchdog(0.5, grace_s=0.2), Checkpoints(), AfterTrain()], [], steps_per_epoch=10,
                max_epoch=1)
    """)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "global step 4 (epoch 1) has not finished after 0.5 s" in proc.stderr
    assert "The Python stacks of every thread:" in proc.stderr
    assert "[MainThread] (most recent call first)" in proc.stderr and "in stuck_step" in proc.stderr
    assert ("global step 4 did not return within 0.2 s more: exiting at once with status 1, without "
            "after_train. Lost: the 1 step(s) finished since the last checkpoint (ckpt-2, global step 2; "
            "global step 3 had finished) and the step in progress.") in proc.stderr
    assert "after_train ran" not in proc.stdout


def test_epoch_end_callbacks_and_a_first_step_within_its_own_limit_are_not_stopped():
    slow = threading.Event()

    class SlowEpochEnd(Callback):
        def _trigger(self):
            slow.wait(1.2)  # longer than timeout_s: a validation, not a step

    t = Trainer()

    def step():
        if t.global_step == 0:
            slow.wait(1.2)  # the first step compiles: first_step_timeout_s applies

    t.train_op = step
    watchdog = StepWatchdog(0.5, first_step_timeout_s=60, grace_s=60)
    t.train([watchdog, SlowEpochEnd()], [], steps_per_epoch=3, max_epoch=1)
    assert t.global_step == 3
    assert not any(th.name == watchdog.name for th in threading.enumerate())


def test_a_watchdog_thread_ends_with_a_run_that_fails():
    class Fails(Callback):
        def _trigger_step(self):
            raise ValueError("boom")

    t = Trainer()
    t.train_op = lambda: None
    watchdog = StepWatchdog(30)
    with pytest.raises(ValueError, match="boom"):
        t.train([watchdog, Fails()], [], steps_per_epoch=2, max_epoch=1)
    assert not any(th.name == watchdog.name for th in threading.enumerate())
