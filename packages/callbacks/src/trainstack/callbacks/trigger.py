"""Scheduling wrappers: run a callback more often, less often, or when a predicate holds.

- :class:`PeriodicTrigger` calls the wrapped callback's ``trigger()`` every k
  steps and/or every k epochs (instead of after every epoch); its other hooks
  run as usual. It can make a callback run *more* often than once an epoch.
- :class:`EnableCallbackIf` lets the per-epoch and per-step hooks of the
  wrapped callback through only when a predicate holds.
- :class:`PeriodicCallback` is :class:`EnableCallbackIf` with an "every k
  steps / epochs" predicate: it can only make a callback run *less* often.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from trainstack.loop import Callback, RunArgs, RunContext, RunValues
from trainstack.loop.checks import check_bool, check_int

from .proxy import ProxyCallback

__all__ = ["PeriodicTrigger", "EnableCallbackIf", "PeriodicCallback"]


def _check_period(owner: str, arg: str, k: Any) -> int | None:
    return check_int(owner, arg, k, minimum=1, none_ok=True)


class PeriodicTrigger(ProxyCallback):
    """Call ``triggerable.trigger()`` when ``global_step % every_k_steps == 0`` (checked
    after each step) and/or when ``epoch_num % every_k_epochs == 0`` (after each epoch),
    and once before training if ``before_train``.

    The schedule replaces the wrapped callback's own epoch trigger: its
    ``trigger_epoch`` is not forwarded. All its other hooks run unchanged.
    """

    _name_prefix = "PeriodicTrigger"

    def __init__(self, triggerable: Callback, every_k_steps: int | None = None,
                 every_k_epochs: int | None = None, before_train: bool = False) -> None:
        super().__init__(triggerable)
        if not _has_trigger(triggerable):
            raise ValueError(
                f"PeriodicTrigger: {triggerable.name} does not override trigger() or _trigger(), so "
                "there is nothing to trigger; wrap it in PeriodicCallback to run its other hooks "
                "less often")
        self._step_k = _check_period("PeriodicTrigger", "every_k_steps", every_k_steps)
        self._epoch_k = _check_period("PeriodicTrigger", "every_k_epochs", every_k_epochs)
        self._trigger_before_train = check_bool(type(self).__name__, "before_train", before_train)
        if self._step_k is None and self._epoch_k is None and not self._trigger_before_train:
            raise ValueError(
                f"PeriodicTrigger({triggerable.name}) would never trigger: give every_k_steps, "
                "every_k_epochs or both (or before_train=True to trigger only once before training)")

    def overrides(self, hook: str) -> bool:
        if hook == "trigger_epoch":
            return self._epoch_k is not None
        if hook == "trigger_step" and self._step_k is not None:
            return True
        if hook == "before_train" and self._trigger_before_train:
            return True
        return self.cb.overrides(hook)

    def _before_train(self) -> None:
        self.cb.before_train()
        if self._trigger_before_train:
            self.cb.trigger()

    def _trigger_step(self) -> None:
        self.cb.trigger_step()
        if self._step_k is not None and self.global_step % self._step_k == 0:
            self.cb.trigger()

    def _trigger_epoch(self) -> None:
        if self._epoch_k is not None and self.epoch_num % self._epoch_k == 0:
            self.cb.trigger()


def _has_trigger(cb: Callback) -> bool:
    cls = type(cb)
    return cls.trigger is not Callback.trigger or cls._trigger is not Callback._trigger


class EnableCallbackIf(ProxyCallback):
    """Run the wrapped callback's ``before_epoch``, ``after_epoch``, ``before_run``,
    ``after_run``, ``trigger_step`` and ``trigger_epoch`` only when ``pred(self)`` is true.

    ``setup_graph``, ``before_train``, ``after_train`` and direct ``trigger()`` calls
    always go through. For a hooked run, ``pred`` is evaluated once, in
    ``before_run``; ``after_run`` is forwarded exactly when ``before_run`` was.
    """

    _name_prefix = "EnableCallbackIf"

    def __init__(self, callback: Callback, pred: Callable[[EnableCallbackIf], bool]) -> None:
        super().__init__(callback)
        if not callable(pred):
            raise TypeError(f"EnableCallbackIf({callback.name}, pred=...) expects a function "
                            f"taking the wrapper and returning a bool, got {pred!r}")
        self._pred = pred
        self._run_enabled = False

    def overrides(self, hook: str) -> bool:
        if hook == "before_run":  # before_run decides for after_run too
            return self.cb.overrides("before_run") or self.cb.overrides("after_run")
        return self.cb.overrides(hook)

    def _enabled(self) -> bool:
        return bool(self._pred(self))

    def _before_epoch(self) -> None:
        if self._enabled():
            self.cb.before_epoch()

    def _before_run(self, ctx: RunContext) -> RunArgs | None:
        self._run_enabled = self._enabled()
        if self._run_enabled and self.cb.overrides("before_run"):
            return self.cb.before_run(ctx)
        return None

    def _after_run(self, run_context: RunContext, run_values: RunValues) -> None:
        if self._run_enabled:
            self._run_enabled = False
            self.cb.after_run(run_context, run_values)

    def _trigger_step(self) -> None:
        if self._enabled():
            self.cb.trigger_step()

    def _after_epoch(self) -> None:
        if self._enabled():
            self.cb.after_epoch()

    def _trigger_epoch(self) -> None:
        if self._enabled():
            self.cb.trigger_epoch()


class PeriodicCallback(EnableCallbackIf):
    """Enable the wrapped callback's per-epoch and per-step hooks only when
    ``global_step % every_k_steps == 0`` or ``epoch_num % every_k_epochs == 0``.

    With ``every_k_epochs``, the hooks are also enabled on the last step of the
    last epoch, so that the end of training is never skipped. Counters are read
    when each hook runs: in ``before_run`` the global step counts the steps
    finished before the one about to run.
    """

    _name_prefix = "PeriodicCallback"

    def __init__(self, callback: Callback, every_k_steps: int | None = None,
                 every_k_epochs: int | None = None) -> None:
        self._step_k = _check_period("PeriodicCallback", "every_k_steps", every_k_steps)
        self._epoch_k = _check_period("PeriodicCallback", "every_k_epochs", every_k_epochs)
        if self._step_k is None and self._epoch_k is None:
            raise ValueError(f"PeriodicCallback({getattr(callback, 'name', callback)!r}) needs "
                             "every_k_steps, every_k_epochs or both")
        super().__init__(callback, PeriodicCallback._is_due)  # type: ignore[arg-type]  # called with self

    def _is_due(self) -> bool:
        if self._step_k is not None and self.global_step % self._step_k == 0:
            return True
        if self._epoch_k is not None:
            if self.epoch_num % self._epoch_k == 0:
                return True
            trainer = self.trainer
            return (self.epoch_num == trainer.max_epoch
                    and self.local_step == trainer.steps_per_epoch - 1)
        return False
