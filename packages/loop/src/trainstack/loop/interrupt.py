"""Graceful interruption: SIGTERM or Ctrl-C stops training after the current step.

While :meth:`Trainer.main_loop` runs (in the main thread), the first SIGTERM
or SIGINT only marks the loop as interrupted (``trainer.loop.interrupted``,
the signal's name): the step in progress finishes, training stops before the
next one, every callback's ``after_train`` runs (savers write a checkpoint of
that very step, writers flush their stats), and then the loop raises
:class:`TrainingInterrupted`, an ordinary exception (``except Exception`` in a sweep
or a notebook catches it) carrying ``exit_code``, ``128 + signal number``. Left
uncaught, it ends the program with that status, as the signal would have, and one
line instead of a traceback (:func:`exit_with_status_when_uncaught`).

A second SIGTERM or SIGINT during that graceful stop ends the process at once,
with status ``128 +`` the second signal's number (130 for Ctrl-C, 143 for
SIGTERM) and one line saying what is lost: the steps since the last checkpoint.
No ``after_train`` runs then; checkpoints already written stay as they were (a
checkpoint being written is named in the ``checkpoint`` file only once complete).
It works while the main thread is blocked inside a step (compiled code, a
collective waiting for a dead peer), where Python runs no signal handler: a
helper thread reads the signals from Python's wakeup file descriptor
(``signal.set_wakeup_fd``). For the same reason, when the first signal finds the
step blocked, that thread says so within a second instead of staying silent.

``main_loop(..., handle_signals=False)`` (``train``, ``train_with_defaults``,
``TrainConfig(handle_signals=False)``) installs no handler: the process's own
stay (see :meth:`Trainer.main_loop` for what is lost).

A process forked while training runs (tensorpack's fork-based DataFlow workers,
started when training starts) inherits the handlers but does not train: there a
signal gets the handling it had before training, so ``terminate()`` still ends it.
"""
from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from ._console import flush_output

if TYPE_CHECKING:  # pragma: no cover
    from .state import TrainLoop

__all__ = ["TrainingInterrupted", "INTERRUPT_SIGNALS", "stop_after_this_step", "second_signal_hint",
           "exit_with_status_when_uncaught"]

logger = logging.getLogger("trainstack.loop")

#: the signals that interrupt training gracefully
INTERRUPT_SIGNALS = (signal.SIGTERM, signal.SIGINT)

# seconds the first signal may wait for the main thread before the watcher says the step is blocked
_BLOCKED_NOTICE_S = 1.0


class TrainingInterrupted(Exception):
    """Training stopped because of a signal, after its callbacks saved and flushed.

    An ordinary exception: ``except Exception`` (a sweep, a notebook) catches it.
    ``exit_code`` is ``128 + signum`` (143 for SIGTERM, 130 for Ctrl-C), ``signal_name``
    and ``global_step`` say where. Uncaught, the program exits with ``exit_code`` and
    one line, without a traceback (:func:`exit_with_status_when_uncaught`, which the
    loop arranges before raising it).
    """

    def __init__(self, signal_name: str, global_step: int) -> None:
        super().__init__(signal_name, global_step)
        self.signal_name = signal_name
        self.global_step = global_step
        self.exit_code = 128 + signal.Signals[signal_name].value

    def __str__(self) -> str:
        return f"training interrupted by {self.signal_name} after global step {self.global_step}"


def exit_with_status_when_uncaught() -> None:
    """Make an uncaught :class:`TrainingInterrupted` end the program with its ``exit_code``
    (and one line on stderr) instead of status 1 and a traceback; other exceptions go to the
    ``sys.excepthook`` that was in place. Installed once, the first time the loop raises one
    (importing the loop changes nothing). A hook installed later replaces this one; IPython
    and Jupyter show the exception as any other (the kernel stays up)."""
    if getattr(sys.excepthook, "_trainstack_exit_status", False):
        return
    previous = sys.excepthook

    def hook(kind: type[BaseException], value: BaseException, tb: Any) -> None:
        if isinstance(value, TrainingInterrupted):
            flush_output()
            print(f"{type(value).__name__}: {value}; exiting with status {value.exit_code}",
                  file=sys.stderr, flush=True)
            # a SystemExit raised by sys.excepthook ends the interpreter with its code (CPython's
            # handling of uncaught exceptions), after atexit handlers, as an uncaught one would
            raise SystemExit(value.exit_code)
        previous(kind, value, tb)

    hook._trainstack_exit_status = True  # type: ignore[attr-defined]
    sys.excepthook = hook


@contextlib.contextmanager
def interruptible(loop: TrainLoop, on_interrupt: Callable[[str], None] | None = None,
                  lost: Callable[[], str] | None = None) -> Iterator[None]:
    """Serve SIGTERM/SIGINT as described in the module docstring while the block runs (a no-op
    outside the main thread, where Python cannot install signal handlers). The first signal
    calls ``on_interrupt(signal name)`` (default: :func:`stop_after_this_step`); a second one
    ends the process after logging ``lost()``, what that loses (default: the loop's count)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    on_interrupt = on_interrupt or (lambda name: stop_after_this_step(loop, name))
    lost = lost or (lambda: f"the steps since the last checkpoint (global step {loop.global_step} "
                            "had finished) and the step in progress")
    trainer_pid = os.getpid()
    served = threading.Event()  # the main thread has served the first signal

    def force(name: str) -> None:
        _exit_at_once(name, lost)

    def handle(signum: int, frame: Any) -> None:
        if os.getpid() != trainer_pid:  # a process forked during training: the signal is its own
            _handle_as_before(signum, frame, previous[signal.Signals(signum)])
            return
        name = signal.Signals(signum).name
        if served.is_set():
            force(name)  # returns only when the watcher is ending the process already
            return
        served.set()
        on_interrupt(name)

    previous = {sig: signal.signal(sig, handle) for sig in INTERRUPT_SIGNALS}
    try:
        with _SignalWatcher(served, force):
            yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


class _SignalWatcher:
    """A thread reading the signal numbers that Python's C-level handler writes to the wakeup
    file descriptor as each signal arrives, even while the main thread is blocked in C code:
    on the second SIGTERM/SIGINT it calls ``force(signal name)``. A wakeup descriptor set
    before (an asyncio loop's) still receives every byte, and is put back at the end."""

    def __init__(self, served: threading.Event, force: Callable[[str], None]) -> None:
        self._served, self._force = served, force
        self._first = ""  # the first signal's name
        self._reader, self._writer = socket.socketpair()
        self._writer.setblocking(False)  # the C handler must never block on it
        self._previous = signal.set_wakeup_fd(self._writer.fileno(), warn_on_full_buffer=False)
        _watching.add(os.getpid())
        self._thread = threading.Thread(target=self._run, name="trainstack-signal-watcher", daemon=True)

    def __enter__(self) -> _SignalWatcher:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        signal.set_wakeup_fd(self._previous)
        _watching.discard(os.getpid())
        self._writer.close()  # the reader sees the end of the stream: the thread returns
        self._thread.join()
        self._reader.close()

    def _run(self) -> None:
        count = 0
        while True:
            try:
                data = self._reader.recv(64)
            except TimeoutError:  # the first signal, not served by the main thread within the notice time
                self._reader.settimeout(None)
                if not self._served.is_set():
                    logger.warning("%s received while training is blocked in a call that has not returned "
                                   "(a step, most likely): training stops once it returns %s.", self._first,
                                   second_signal_hint(self._first))
                continue
            except OSError:
                return
            if not data:
                return
            if self._previous != -1:
                with contextlib.suppress(OSError):
                    os.write(self._previous, data)
            for signum in data:
                if signum not in INTERRUPT_SIGNALS:
                    continue
                count += 1
                if count == 1:
                    self._first = signal.Signals(signum).name
                    self._reader.settimeout(_BLOCKED_NOTICE_S)
                else:
                    self._force(signal.Signals(signum).name)


# processes (by pid) whose wakeup descriptor is a watcher's: a child forked from one must not write
# its own signals into the parent's watcher, so it gets no wakeup descriptor
_watching: set[int] = set()


def _forget_wakeup_fd_in_child() -> None:
    if _watching:
        _watching.clear()
        with contextlib.suppress(ValueError):  # forked from a thread Python does not count as main
            signal.set_wakeup_fd(-1)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_wakeup_fd_in_child)

_exit_lock = threading.Lock()


def _exit_at_once(name: str, lost: Callable[[], str]) -> None:
    """End the process now, with status 128 + the signal's number, after one line saying what is lost."""
    code = 128 + signal.Signals[name].value
    if not _exit_lock.acquire(blocking=False):  # the other thread is ending the process already
        return
    try:
        what = lost()
    except Exception as e:  # noqa: BLE001 - the line must be printed whatever the callbacks say
        what = f"the steps since the last checkpoint (which could not be named: {e!r})"
    logger.error("A second signal (%s): exiting at once with status %d, without after_train. Lost: %s.",
                 name, code, what)
    flush_output()
    os._exit(code)


def _handle_as_before(signum: int, frame: Any, before: Any) -> None:
    """Put ``before`` (what ``signal.signal`` returned when the loop installed its handler) back
    for ``signum`` and serve this signal as it would have: call it, ignore it, or re-raise the
    signal to get the default action (a SIGTERM ends the process)."""
    signal.signal(signum, before if before is not None else signal.SIG_DFL)
    if callable(before):
        before(signum, frame)
    elif before != signal.SIG_IGN:
        os.kill(os.getpid(), signum)


def stop_after_this_step(loop: TrainLoop, name: str, why: str = "received") -> None:
    """Mark ``loop`` as interrupted by signal ``name``: it stops after the step in progress.

    The line logged here names no step: a signal can land before the step in progress
    has counted itself or after, so only the loop's stop knows the last step, and the lines
    logged then (the checkpoint's, the exit's) name it, all with the same number."""
    loop.interrupted = name
    loop.stop_reason = f"{name} {why}"
    logger.warning("%s %s: training stops before its next step starts; the callbacks then save a "
                   "checkpoint of the last finished step and flush their stats %s.", name, why,
                   second_signal_hint(name))


def second_signal_hint(name: str) -> str:
    """What a second signal does, in parentheses (see the module docstring)."""
    if name == "SIGINT":
        return "(Ctrl-C again to exit at once, losing the steps since the last checkpoint)"
    return f"(a second {name} or SIGINT exits at once, losing the steps since the last checkpoint)"
