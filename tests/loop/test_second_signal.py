"""A second SIGTERM/SIGINT during the graceful stop ends the process at once with the second signal's
status and one line naming the steps lost since the last checkpoint; the signal watcher, its wakeup
descriptor and its thread are gone after the loop; forked children's signals are their own. Runs
that end the process run in a subprocess."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading

import pytest

from trainstack.loop import Callback, Trainer

pytestmark = pytest.mark.skipif(threading.current_thread() is not threading.main_thread(),
                                reason="signal handlers are installed from the main thread only")

SCRIPT = textwrap.dedent("""
    import os, signal, threading, time
    from trainstack.loop import Callback, Trainer

    class Checkpoints(Callback):  # what a saver says its last checkpoint is
        def last_checkpoint(self):
            return (2, "ckpt-2") if self.global_step >= 2 else None

    class AfterTrain(Callback):
        def _after_train(self):
            print("after_train ran", flush=True)

    def send_both():
        os.kill(os.getpid(), signal.{first})
        while t.loop.interrupted is None:  # served: a second one sent before may merge with it
            time.sleep(0.01)
        os.kill(os.getpid(), signal.{second})

    def step():
        if t.global_step == 3:  # blocks; the signals come from another thread
            threading.Thread(target=send_both).start()
            threading.Event().wait()

    t = Trainer()
    t.train_op = step
    t.train([Checkpoints(), AfterTrain()], [], steps_per_epoch=10, max_epoch=1)
""")


@pytest.mark.parametrize(("first", "second", "status"), [("SIGTERM", "SIGTERM", 143), ("SIGTERM", "SIGINT", 130),
                                                         ("SIGINT", "SIGINT", 130)])
def test_a_second_signal_exits_at_once_naming_the_steps_since_the_last_checkpoint(first, second, status):
    proc = subprocess.run([sys.executable, "-c", SCRIPT.format(first=first, second=second)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == status, proc.stderr[-3000:]
    assert f"{first} received: training stops before its next step starts" in proc.stderr
    hint = ("Ctrl-C again to exit at once" if first == "SIGINT" else "a second SIGTERM or SIGINT exits at once")
    assert f"({hint}, losing the steps since the last checkpoint)" in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if "A second signal" in line]
    assert len(lines) == 1, proc.stderr[-3000:]
    assert lines[0].endswith(f"A second signal ({second}): exiting at once with status {status}, without "
                             "after_train. Lost: the 1 step(s) finished since the last checkpoint (ckpt-2, global "
                             "step 2; global step 3 had finished) and the step in progress.")
    assert "after_train ran" not in proc.stdout and "Traceback" not in proc.stderr


def test_the_watcher_is_gone_after_the_loop_and_a_wakeup_fd_set_before_gets_every_signal():
    """An asyncio loop's wakeup descriptor (here a socket) still learns of the signals sent during
    training, and is the process's wakeup descriptor again after it."""
    reader, writer = socket.socketpair()
    writer.setblocking(False)
    previous_usr1 = signal.signal(signal.SIGUSR1, lambda signum, frame: None)
    before = signal.set_wakeup_fd(writer.fileno())
    try:
        class SendUsr1(Callback):
            def _trigger_step(self):
                os.kill(os.getpid(), signal.SIGUSR1)

        t = Trainer()
        t.train_op = lambda: None
        t.train([SendUsr1()], [], steps_per_epoch=1, max_epoch=1)
        assert signal.set_wakeup_fd(writer.fileno()) == writer.fileno()  # ours again
        reader.settimeout(10)
        assert reader.recv(16) == bytes([signal.SIGUSR1])  # forwarded by the watcher
    finally:
        signal.set_wakeup_fd(before)
        signal.signal(signal.SIGUSR1, previous_usr1)
        reader.close()
        writer.close()
    assert not any(th.name == "trainstack-signal-watcher" for th in threading.enumerate())


FORK_SCRIPT = textwrap.dedent("""
    import multiprocessing, time
    from trainstack.loop import Callback, Trainer

    def sleep_then_exit(started):
        started.set()
        time.sleep(30)

    class ForkTwoAndTerminate(Callback):
        def _before_train(self):
            context = multiprocessing.get_context("fork")
            for _ in range(2):
                started = context.Event()
                child = context.Process(target=sleep_then_exit, args=(started,), daemon=True)
                child.start()
                assert started.wait(10)
                child.terminate()
                child.join(10)
                print("child exit code", child.exitcode, flush=True)

    t = Trainer()
    t.train_op = lambda: None
    t.train([ForkTwoAndTerminate()], [], steps_per_epoch=2, max_epoch=1)
    print("trained", t.global_step, t.loop.interrupted, flush=True)
""")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_signals_of_forked_children_are_not_counted_as_the_trainers():
    """Two children forked during training get a SIGTERM each: without their own wakeup descriptor
    they would write both into the trainer's watcher, which would take them for a second signal."""
    proc = subprocess.run([sys.executable, "-c", FORK_SCRIPT], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.count(f"child exit code {-signal.SIGTERM}") == 2
    assert "trained 2 None" in proc.stdout
