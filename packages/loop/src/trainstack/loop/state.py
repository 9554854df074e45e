"""The loop state: the one place where the loop's counters live.

Callbacks and trainers read ``epoch_num``, ``global_step`` and ``local_step``
from here (through ``trainer.epoch_num`` etc.) instead of keeping copies.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .checks import check_int
from .stop import NonFiniteError

__all__ = ["TrainLoop"]

_STATE_KEYS = (
    "starting_epoch", "max_epoch", "steps_per_epoch",
    "epoch_num", "local_step", "global_step", "epoch_finished",
)


class TrainLoop:
    """The epoch × step double loop and its counters.

    Semantics (those of tensorpack):

    - ``epoch_num``: the epoch currently running. Epochs are numbered
      ``starting_epoch .. max_epoch``, both included; before training it is
      ``starting_epoch - 1``. An epoch covers ``before_epoch`` up to and
      including ``trigger_epoch``.
    - ``local_step``: index (from 0) of the step currently running inside the
      epoch; -1 before the epoch's first step.
    - ``global_step``: the number of steps that have finished, across all
      epochs (it grows by ``run_size`` right after each hooked run returns,
      before ``after_run``).
    - ``epoch_finished``: all steps of ``epoch_num`` have run.
    - ``run_size``: the steps the current hooked run makes (1, or up to the
      trainer's ``steps_per_run``: fewer at the end of an epoch, so epochs stay
      exact). ``local_step`` is then the last of them, and ``global_step``
      grows by ``run_size`` after the run.

    ``state_dict()`` / ``load_state_dict()`` save and restore these so that a
    resumed run continues with the step after the last one that started.
    """

    def __init__(self) -> None:
        self.starting_epoch = 1
        self.max_epoch = 0
        self.steps_per_epoch = 0
        self.epoch_num = 0
        self.local_step = -1
        self.global_step = 0
        self.epoch_finished = True
        self.run_size = 1
        #: why a stop was requested (see Trainer.request_stop), or None
        self.stop_reason: str | None = None
        #: the signal that interrupted training (e.g. "SIGTERM"; see interrupt.py), or None
        self.interrupted: str | None = None
        #: the NonFiniteError of a stop for NaN or infinite values (see Trainer.stop_on_nonfinite),
        #: which main_loop raises after every after_train; or None
        self.nonfinite: NonFiniteError | None = None
        self._loaded = False

    @property
    def stop_requested(self) -> bool:
        """Whether training should stop before the next step."""
        return self.stop_reason is not None

    @property
    def resumed(self) -> bool:
        """Whether the counters come from a saved state (:meth:`load_state_dict`): a resumed run."""
        return self._loaded

    def configure(self, steps_per_epoch: int, starting_epoch: int | None, max_epoch: int) -> None:
        """Set the loop's bounds. After ``load_state_dict`` the position is kept."""
        steps_per_epoch = check_int("TrainLoop.configure", "steps_per_epoch", steps_per_epoch, minimum=0)
        max_epoch = check_int("TrainLoop.configure", "max_epoch", max_epoch, minimum=0)
        if self._loaded:
            if starting_epoch is not None and check_int(
                    "TrainLoop.configure", "starting_epoch", starting_epoch, minimum=0) != self.starting_epoch:
                raise ValueError(
                    f"starting_epoch={starting_epoch} conflicts with the loaded loop state, "
                    f"which resumes a run that started at epoch {self.starting_epoch}; "
                    "pass starting_epoch=None (or the same value) to resume it")
        else:
            self.starting_epoch = check_int(
                "TrainLoop.configure", "starting_epoch", 1 if starting_epoch is None else starting_epoch,
                minimum=0)
            self.epoch_num = self.starting_epoch - 1
            self.local_step = -1
            self.epoch_finished = True
        self.steps_per_epoch = steps_per_epoch
        self.max_epoch = max_epoch

    def epochs(self) -> Iterator[int]:
        """Yield the epochs to run, from the resume point to ``max_epoch``."""
        first = self.epoch_num + 1 if self.epoch_finished else self.epoch_num
        for epoch in range(first, self.max_epoch + 1):
            if epoch != self.epoch_num:  # a new epoch, not the resumed one
                self.epoch_num, self.local_step = epoch, -1
            self.epoch_finished = False
            yield epoch

    def steps(self, steps_per_run: int = 1) -> Iterator[int]:
        """Yield, run after run, the last local step of each run of up to ``steps_per_run``
        steps left in the current epoch (``run_size`` says how many); mark it finished after."""
        steps_per_run = check_int("TrainLoop.steps", "steps_per_run", steps_per_run, minimum=1)
        first = self.local_step + 1
        try:
            while first < self.steps_per_epoch:
                self.run_size = min(steps_per_run, self.steps_per_epoch - first)
                self.local_step = first + self.run_size - 1
                yield self.local_step
                first = self.local_step + 1
        finally:
            self.run_size = 1
        self.epoch_finished = True

    def state_dict(self) -> dict[str, Any]:
        """The counters as a JSON-serialisable dict."""
        return {k: getattr(self, k) for k in _STATE_KEYS}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore counters saved by :meth:`state_dict`; the next loop resumes there."""
        missing = [k for k in _STATE_KEYS if k not in state]
        if missing:
            raise KeyError(f"loop state is missing {missing}; expected the keys {list(_STATE_KEYS)} "
                           "as written by TrainLoop.state_dict()")
        for k in _STATE_KEYS:
            v = state[k]
            expected = bool if k == "epoch_finished" else int
            if not isinstance(v, expected) or (expected is int and isinstance(v, bool)):
                raise TypeError(f"loop state {k!r} must be {expected.__name__}, got {v!r}")
            setattr(self, k, v)
        self._loaded = True
