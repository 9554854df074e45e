"""Callbacks that end training: on a non-finite loss, or when a statistic stops improving."""
from __future__ import annotations

import logging
import math
from collections.abc import Sequence

import numpy as np
import tensorflow as tf

from trainstack.loop import Callback, RunContext, RunValues, StopTraining
from trainstack.loop.checks import check_int, check_number

from .callback_state import NumbersState
from .logdir import get_logger_dir

__all__ = ["TerminateOnNaN", "EarlyStopping"]

logger = logging.getLogger("trainstack.callbacks")


class TerminateOnNaN(Callback):
    """Stop training as soon as a value of the step is NaN or infinite.

    ``names`` are values the step returns; they are fetched every
    ``check_every_k_steps``-th step (global steps k, 2k, ...). A bad value
    stops training right after that step, before its ``trigger_step`` (so no
    periodic checkpoint saves the broken weights); every callback's
    ``after_train`` still runs, then the run ends with ``NonFiniteError``
    (``on_nonfinite="stop"``: quietly; see ``Trainer.stop_on_nonfinite``). The
    message also names the first step whose loss or gradients were not finite
    when the trainer records it (the towers' trainers do).
    """

    _chief_only = False  # every process must stop, not only the chief

    def __init__(self, names: Sequence[str] = ("loss",), check_every_k_steps: int = 1) -> None:
        if isinstance(names, str) or not isinstance(names, Sequence) or not names or not all(
                isinstance(n, str) for n in names):
            raise TypeError(f"TerminateOnNaN(names=...) expects a non-empty list of value names, "
                            f"got {names!r}; e.g. TerminateOnNaN(['loss'])")
        self._names = list(names)
        self._k = check_int("TerminateOnNaN", "check_every_k_steps", check_every_k_steps, minimum=1)

    def _before_run(self, ctx: RunContext) -> list[str] | None:
        # global_step counts the finished steps: the one about to run is global_step + 1
        if (self.global_step + 1) % self._k == 0:
            return self._names
        return None

    def _after_run(self, run_context: RunContext, run_values: RunValues) -> None:
        if run_values.results is None:
            return
        for name, value in zip(self._names, run_values.results):
            shown = _non_finite(value)
            if shown is not None:
                error = self.trainer.stop_on_nonfinite(
                    f"{self.name}: {name!r} is {shown} at global_step {self.global_step} "
                    f"(epoch {self.epoch_num}, local step {self.local_step}); stopping training.",
                    then=f"The last good checkpoint is {_latest_checkpoint()}")
                logger.error("%s", error)
                raise StopTraining(str(error))


def _latest_checkpoint() -> str:
    """The newest checkpoint in the logger directory (where ModelSaver writes by default)."""
    directory = get_logger_dir()
    latest = tf.train.latest_checkpoint(directory) if directory else None
    return latest or f"none (in the logger directory {directory})"


def _non_finite(value: object) -> str | None:
    """None when every element of ``value`` is finite, else what is not (for the message)."""
    array = np.asarray(value)
    if array.dtype.kind not in "fc":  # integers and booleans are always finite
        return None
    finite = np.isfinite(array)
    if finite.all():
        return None
    if array.size == 1:
        return str(array.item())
    return f"{array.size - int(finite.sum())} non-finite of {array.size} elements"


_MODES = ("min", "max")


class EarlyStopping(Callback):
    """Stop training when the statistic ``monitor`` has not improved in ``patience`` checks.

    It is checked each time the callback is triggered (after each epoch by
    default) by reading ``trainer.monitors``; a check counts only when a new
    value was put since the previous one, so a statistic computed every few
    epochs is not mistaken for a stalled one. Improving means going below
    (``mode="min"``) or above (``"max"``) the best value by more than
    ``min_delta``. On stopping, the epoch's remaining callbacks still run
    (checkpoints of the last epoch are written), then training ends as with
    :class:`StopTraining`. Put it after the callback that computes the statistic.

    The best value, its epoch and the count of bad checks are checkpointed by
    :class:`ModelSaver` (see :mod:`~trainstack.callbacks.callback_state`): a resumed run
    stops when the uninterrupted run would.
    """

    def __init__(self, monitor: str = "val_loss", mode: str = "min", patience: int = 3,
                 min_delta: float = 0.0) -> None:
        if not isinstance(monitor, str) or not monitor:
            raise TypeError(f"EarlyStopping(monitor=...) expects the name of a scalar statistic, "
                            f"got {monitor!r}")
        if mode not in _MODES:
            raise ValueError(f"EarlyStopping(mode=...) must be 'min' or 'max', got {mode!r}")
        patience = check_int("EarlyStopping", "patience", patience, minimum=0)
        min_delta = check_number("EarlyStopping", "min_delta", min_delta, minimum=0)
        self.monitor = monitor
        self.mode = mode
        self.patience = patience
        self.min_delta = float(min_delta)
        self._state: NumbersState | None = None
        self._reset()

    def _reset(self) -> None:
        self.best: float | None = None
        self.best_epoch: int | None = None
        self.bad_checks = 0
        self._seen = 0  # how many values of the statistic were already judged
        self._warned = False

    def _setup_graph(self) -> None:
        # a fresh start for each training; not at before_train, where ModelSaver may already
        # have restored the state of a resumed run
        self._reset()

    def checkpoint_state(self) -> NumbersState:
        """The best value, its epoch and the bad checks, in variables (see callback_state)."""
        if self._state is None:
            self._state = NumbersState("EarlyStopping", best=1, best_epoch=1, bad_checks=1, seen_latest=1)
        self._state.put("best", [] if self.best is None else [self.best])
        self._state.put("best_epoch", [] if self.best_epoch is None else [self.best_epoch])
        self._state.put("bad_checks", [self.bad_checks])
        assert self.trainer.monitors is not None
        seen = self._seen == len(self.trainer.monitors.get_history(self.monitor))
        self._state.put("seen_latest", [float(seen)])
        return self._state

    def load_checkpoint_state(self) -> None:
        """Continue from the best value and bad checks counted before the checkpoint."""
        assert self._state is not None
        best, best_epoch = self._state.get("best"), self._state.get("best_epoch")
        self.best = best[0] if best else None
        self.best_epoch = int(best_epoch[0]) if best_epoch else None
        self.bad_checks = int(self._state.get("bad_checks")[0])
        # the monitors' latest scalars are restored first: a value put after the last check is new
        assert self.trainer.monitors is not None
        known = len(self.trainer.monitors.get_history(self.monitor))
        self._seen = known if self._state.get("seen_latest") == [1.0] else max(known - 1, 0)

    def _trigger(self) -> None:
        assert self.trainer.monitors is not None
        history = self.trainer.monitors.get_history(self.monitor)
        if not history:
            if not self._warned:
                self._warned = True
                logger.warning("%s: no statistic named %r was put in the monitors (known: %s); "
                               "nothing to watch yet. Is the callback that computes it registered "
                               "before this one?", self.name, self.monitor,
                               self.trainer.monitors.scalar_names())
            return
        if len(history) == self._seen:
            return  # no new value since the last check
        self._seen = len(history)
        value = float(history[-1])
        if self._improved(value):
            self.best, self.best_epoch, self.bad_checks = value, self.epoch_num, 0
            return
        self.bad_checks += 1
        if self.bad_checks >= self.patience:
            self.trainer.request_stop(
                f"{self.name}: {self.monitor} has not improved for {self.bad_checks} checks "
                f"(best {self.best} at epoch {self.best_epoch}, now {value})")

    def _improved(self, value: float) -> bool:
        if math.isnan(value):
            return False
        if self.best is None:
            return True
        if self.mode == "min":
            return value < self.best - self.min_delta
        return value > self.best + self.min_delta
