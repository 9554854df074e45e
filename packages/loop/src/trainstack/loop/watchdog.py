"""StepWatchdog: report and end a run whose step does not finish within a time limit.

tensorpack's ``SessionRunTimeout`` for a loop without sessions. A step that never
ends (a collective waiting for a peer that died, a first compile that never
finishes, an input that blocks for ever) otherwise holds the process until a
scheduler's SIGKILL, and says nothing about where it hangs. The watchdog is a
thread, armed when a step starts and disarmed when it ends. When a step runs
longer than the limit it logs the step's number, what the trainer's step may be
waiting in (:meth:`Trainer.step_waits_in`, e.g. the gradients' all-reduce of a
distributed trainer) and the Python stacks of every thread (``faulthandler``),
then ends the run with status 1:

- if the step returns within ``grace_s`` (say, the collective's own timeout
  fires), the main thread raises :class:`StepTimeoutError`, and every callback's
  ``after_train`` runs as after any failure: writers flush, savers do not save a
  failed run, so the last checkpoint stays that of the last finished step;
- if it does not (a step blocked inside compiled code cannot be interrupted from
  Python), the watchdog ends the process itself, ``os._exit(1)``, after one line
  saying what is lost. No ``after_train`` runs then; checkpoints already written
  stay as they were.
"""
from __future__ import annotations

import faulthandler
import logging
import os
import re
import tempfile
import threading
import time

from ._console import flush_output
from .callback import Callback
from .checks import check_number

__all__ = ["StepWatchdog", "SessionRunTimeout", "StepTimeoutError"]

logger = logging.getLogger("trainstack.loop")


class StepTimeoutError(RuntimeError):
    """A step ran longer than a :class:`StepWatchdog`'s limit. ``step``: its global step
    number (the step after the last finished one); ``timeout_s``: the limit it exceeded."""

    def __init__(self, message: str, step: int, timeout_s: float) -> None:
        super().__init__(message)
        self.step = step
        self.timeout_s = timeout_s


class StepWatchdog(Callback):
    """End the run when a step runs longer than ``timeout_s`` seconds (see the module docstring).

    The limit covers one call of the trainer's step (``steps_per_run`` steps when it makes
    several per call) together with the per-step hooks of the callbacks around it; epoch-end
    callbacks (a validation, a checkpoint) are not timed. ``first_step_timeout_s`` (default:
    ``timeout_s``) is the limit of the run's first step, which also traces and compiles the
    step function: give it more when that is slow (XLA). ``grace_s``: how long a step that
    ran over may still take to return so that ``after_train`` runs, before the process is
    ended at once. It runs on every process of a distributed run (not chief-only): there
    the limit also bounds how long a process waits for a peer that died.
    """

    _chief_only = False

    #: the exit status of a process the watchdog ends itself
    exit_status = 1

    def __init__(self, timeout_s: float, *, first_step_timeout_s: float | None = None,
                 grace_s: float = 10.0) -> None:
        self.timeout_s = check_number(type(self).__name__, "timeout_s", timeout_s, greater_than=0)
        first = check_number(type(self).__name__, "first_step_timeout_s", first_step_timeout_s,
                             greater_than=0, none_ok=True, note="None: timeout_s")
        self.first_step_timeout_s = self.timeout_s if first is None else first
        self.grace_s = check_number(type(self).__name__, "grace_s", grace_s, minimum=0)
        self._thread: threading.Thread | None = None

    def _default_name(self) -> str:
        return f"{type(self).__name__}({self.timeout_s:g} s)"

    # -- the hooks: arm when a step starts, disarm when it ends --------------------------------
    def _before_train(self) -> None:
        self._cond = threading.Condition()
        self._deadline: float | None = None
        self._limit = self.first_step_timeout_s
        self._stopped = False
        self._expired: StepTimeoutError | None = None
        self._thread = threading.Thread(target=self._watch, name=self.name, daemon=True)
        self._thread.start()

    def _before_epoch(self) -> None:
        self._arm()

    def _trigger_step(self) -> None:
        self._raise_if_expired()
        self._arm()

    def _after_epoch(self) -> None:
        self._raise_if_expired()
        with self._cond:
            self._deadline = None

    def _after_train(self) -> None:
        thread, self._thread = self._thread, None
        if thread is None:
            return
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        thread.join()

    def _arm(self) -> None:
        with self._cond:
            self._step = self.trainer.loop.global_step + 1
            self._armed_limit = self._limit
            self._deadline = time.monotonic() + self._limit
            self._cond.notify_all()
        self._limit = self.timeout_s  # the first step's limit served once

    def _raise_if_expired(self) -> None:
        if self._expired is not None:
            raise self._expired

    # -- the thread ------------------------------------------------------------------------------
    def _watch(self) -> None:
        with self._cond:
            while not self._stopped:
                if self._deadline is None:
                    self._cond.wait()
                elif self._deadline > time.monotonic():
                    self._cond.wait(self._deadline - time.monotonic())
                else:
                    break
            if self._stopped:
                return
            step, limit = self._step, self._armed_limit
        message = self._describe(step, limit)
        self._expired = StepTimeoutError(message, step, limit)
        logger.error("%s The Python stacks of every thread:\n%s", message, _thread_stacks())
        logger.error("%s: ending the run with status %d: every after_train runs if the step returns "
                     "within %g s; if not, the process exits at once.", self.name, self.exit_status,
                     self.grace_s)
        with self._cond:
            self._cond.wait_for(lambda: self._stopped, timeout=self.grace_s)
            if self._stopped:
                return
        logger.error("%s: global step %d did not return within %g s more: exiting at once with status %d, "
                     "without after_train. Lost: %s.", self.name, step, self.grace_s, self.exit_status,
                     self.trainer.lost_on_exit())
        flush_output()
        os._exit(self.exit_status)

    def _describe(self, step: int, limit: float) -> str:
        trainer = self.trainer
        loop = trainer.loop
        text = (f"{self.name}: global step {step} (epoch {loop.epoch_num}) has not finished after "
                f"{limit:g} s, the limit.")
        waits = trainer.step_waits_in()
        if waits:
            text += (f" A step of {type(trainer).__name__} waits in {waits}: a peer process that died "
                     "or hangs leaves the others waiting there; the logs of the other processes say "
                     "which one.")
        return text


class SessionRunTimeout(StepWatchdog):
    """tensorpack's name: ``SessionRunTimeout(timeout_in_ms)`` is ``StepWatchdog(timeout_in_ms / 1000)``.
    Unlike tensorpack's, which made the step fail with TensorFlow's DeadlineExceededError, it
    ends the run as described in the module docstring."""

    def __init__(self, timeout_in_ms: float) -> None:
        ms = check_number("SessionRunTimeout", "timeout_in_ms", timeout_in_ms, greater_than=0)
        super().__init__(ms / 1000)


def _thread_stacks() -> str:
    """``faulthandler``'s traceback of every thread, each thread's id followed by its name."""
    with tempfile.TemporaryFile("w+") as f:
        faulthandler.dump_traceback(file=f, all_threads=True)
        f.seek(0)
        text = f.read()
    names = {f"0x{t.ident:016x}": t.name for t in threading.enumerate() if t.ident is not None}
    lines = []
    for line in text.splitlines():
        header = re.match(r"(?:Current thread|Thread) (0x[0-9a-f]+)", line)
        if header and header.group(1) in names:
            line = line.replace(header.group(1), f"{header.group(1)} [{names[header.group(1)]}]", 1)
        lines.append(line)
    return "\n".join(lines)
