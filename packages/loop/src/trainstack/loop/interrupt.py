"""Graceful interruption: SIGTERM or Ctrl-C stops training after the current step.

While :meth:`Trainer.main_loop` runs (in the main thread), the first SIGTERM
or SIGINT only marks the loop as interrupted (``trainer.loop.interrupted``,
the signal's name): the step in progress finishes, training stops before the
next one, every callback's ``after_train`` runs (savers write a checkpoint of
that very step, writers flush their stats), and then :class:`TrainingInterrupted`
ends the program with status ``128 + signal number``, as the signal would have.
A second Ctrl-C raises ``KeyboardInterrupt`` at once (``after_train`` still
runs, as for any error, but savers no longer save); a second SIGTERM is
ignored (a scheduler's repeated request to stop), the first is being served.

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
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from .state import TrainLoop

__all__ = ["TrainingInterrupted", "INTERRUPT_SIGNALS", "stop_after_this_step", "second_signal_hint"]

logger = logging.getLogger("trainstack.loop")

#: the signals that interrupt training gracefully
INTERRUPT_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class TrainingInterrupted(SystemExit):
    """Training stopped because of a signal, after its callbacks saved and flushed.

    A ``SystemExit`` whose code is ``128 + signum`` (143 for SIGTERM, 130 for
    Ctrl-C): uncaught, the program exits with the status the signal would have
    given, without a traceback. ``signal_name`` and ``global_step`` say where.
    """

    def __init__(self, signal_name: str, global_step: int) -> None:
        super().__init__(128 + signal.Signals[signal_name].value)
        self.signal_name = signal_name
        self.global_step = global_step

    def __str__(self) -> str:
        return f"training interrupted by {self.signal_name} after global step {self.global_step}"


@contextlib.contextmanager
def interruptible(loop: TrainLoop, on_interrupt: Callable[[str], None] | None = None) -> Iterator[None]:
    """Serve SIGTERM/SIGINT as described in the module docstring while the block runs (a no-op
    outside the main thread, where Python cannot install signal handlers). The first signal
    calls ``on_interrupt(signal name)`` (default: :func:`stop_after_this_step`)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    on_interrupt = on_interrupt or (lambda name: stop_after_this_step(loop, name))
    received: list[str] = []
    trainer_pid = os.getpid()

    def handle(signum: int, frame: Any) -> None:
        if os.getpid() != trainer_pid:  # a process forked during training: the signal is its own
            _handle_as_before(signum, frame, previous[signal.Signals(signum)])
            return
        name = signal.Signals(signum).name
        if received:
            if signum == signal.SIGINT:
                loop.interrupted = None  # not a graceful stop any more: savers do not save
                raise KeyboardInterrupt(f"a second {name}: exiting at once")
            return
        received.append(name)
        on_interrupt(name)

    previous = {sig: signal.signal(sig, handle) for sig in INTERRUPT_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


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
    """What a second signal ``name`` does, in parentheses (see the module docstring)."""
    if name == "SIGINT":
        return "(Ctrl-C again to exit at once, without saving)"
    return f"(another {name} is ignored; SIGKILL ends the process at once, without saving)"
