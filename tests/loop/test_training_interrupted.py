"""TrainingInterrupted is an ordinary exception carrying exit_code: ``except Exception`` (a sweep, a
notebook) catches it, while a script that leaves it uncaught still exits with 143 (SIGTERM) or 130
(SIGINT), one line and no traceback, after every after_train ran."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading

import pytest

from trainstack.loop import Callback, Trainer, TrainingInterrupted

pytestmark = pytest.mark.skipif(threading.current_thread() is not threading.main_thread(),
                                reason="signal handlers are installed from the main thread only")


class SignalAt(Callback):
    """Sends the process ``sig`` after global step ``step``; records whether after_train ran."""

    def __init__(self, step: int, sig: int) -> None:
        self.step, self.sig, self.finalized = step, sig, False

    def _trigger_step(self) -> None:
        if self.global_step == self.step:
            os.kill(os.getpid(), self.sig)

    def _after_train(self) -> None:
        self.finalized = True


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_except_exception_catches_an_interrupted_run(sig):
    trainer = Trainer()
    trainer.train_op = lambda: None
    callback = SignalAt(3, sig)
    caught = None
    try:
        trainer.train([callback], [], steps_per_epoch=5, max_epoch=2)
    except Exception as e:  # noqa: BLE001 - what a sweep writes
        caught = e
    assert isinstance(caught, TrainingInterrupted) and not isinstance(caught, SystemExit)
    assert caught.exit_code == 128 + sig
    assert (caught.signal_name, caught.global_step) == (signal.Signals(sig).name, 3)
    assert callback.finalized and trainer.loop.global_step == 3
    assert signal.getsignal(signal.SIGTERM) is not None  # the loop put the handlers back


SCRIPT = textwrap.dedent("""
    import os, signal, sys
    from trainstack.loop import Callback, Trainer

    class SignalAt(Callback):
        def _trigger_step(self):
            if self.global_step == 3:
                os.kill(os.getpid(), {sig})

    def run():
        trainer = Trainer()
        trainer.train_op = lambda: None
        trainer.train([SignalAt()], [], steps_per_epoch=5, max_epoch=2)

    if {sweep}:
        for trial in range(2):
            try:
                run()
            except Exception as e:
                print("trial", trial, "ended:", type(e).__name__, e.exit_code, flush=True)
        raise ValueError("an ordinary error after the sweep")
    run()
""")


def run_script(sig: int, sweep: bool = False) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", SCRIPT.format(sig=int(sig), sweep=sweep)],
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_script_that_leaves_it_uncaught_exits_with_the_signals_status(sig):
    proc = run_script(sig)
    assert proc.returncode == 128 + sig, proc.stderr[-2000:]
    name = signal.Signals(sig).name
    assert (f"TrainingInterrupted: training interrupted by {name} after global step 3; exiting with "
            f"status {128 + sig}") in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_sweep_goes_on_after_an_interrupted_trial_and_other_errors_keep_their_traceback():
    proc = run_script(signal.SIGTERM, sweep=True)
    assert "trial 0 ended: TrainingInterrupted 143" in proc.stdout
    assert "trial 1 ended: TrainingInterrupted 143" in proc.stdout
    # the hook the loop installed passes any other exception to Python's own: traceback, status 1
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "Traceback" in proc.stderr and "ValueError: an ordinary error after the sweep" in proc.stderr
