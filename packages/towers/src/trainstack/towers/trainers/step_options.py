"""StepOptions: how a trainer builds and runs its step, fixed when the trainer is made.

Every single-cost trainer (the multi-GPU and distributed ones included) takes them one way::

    SimpleTrainer(options=StepOptions(xla_compile=True, steps_per_run=10))
    SimpleTrainer(xla_compile=True, steps_per_run=10)     # the same, keyword by keyword

The keywords are checked by :class:`StepOptions` (an unknown or ill-typed one is an error naming
it and the valid ones). The trainer reads them as attributes (``trainer.xla_compile``) but they
cannot be set afterwards: the step is built from them.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from trainstack.loop.checks import ArgumentError, check_bool, check_int

__all__ = ["StepOptions", "StepOption", "resolve_step_options"]


@dataclasses.dataclass(frozen=True)
class StepOptions:
    """The options of a trainer's step.

    - ``steps_per_run``: steps made by one call of the traced step (a loop in the graph over a
      feedfree input); the loop's counters and the progress bar advance by that many; per-step
      callback hooks run once per call, with the fetches of its last step.
    - ``xla_compile``: compile the towers and the update with XLA (``jit_compile``); the input
      stays outside, so queues still work.
    - ``gradient_accumulation_steps``: micro-batches per tower and step; their gradients are
      averaged and applied once (one step on the micro-batches concatenated).
    - ``mixed_precision``: dynamic loss scaling (``keras.optimizers.LossScaleOptimizer``) for a
      model computing in float16 under the ``mixed_float16`` dtype policy.
    - ``skip_nonfinite_steps``: a step whose loss or gradients are not finite changes nothing.
    - ``record_nonfinite``: record in the step where the first non-finite loss or gradient
      appeared (True), only the loss (``"loss"``), or nothing (False).
    - ``gpu_prefetch``: with several devices, ``launch_train_with_config`` copies each tower's
      next batch onto its device while the step runs (``StagingInput``).
    """

    steps_per_run: int = 1
    xla_compile: bool = False
    gradient_accumulation_steps: int = 1
    mixed_precision: bool = False
    skip_nonfinite_steps: bool = False
    record_nonfinite: bool | str = True
    gpu_prefetch: bool = True

    def __post_init__(self) -> None:
        for name in self.names():
            object.__setattr__(self, name, _checked("StepOptions", name, getattr(self, name)))

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The options' names, in order."""
        return tuple(f.name for f in dataclasses.fields(cls))

    def replace(self, **changes: Any) -> StepOptions:
        """A copy with ``changes`` (checked as the constructor checks them)."""
        _refuse_unknown("StepOptions.replace", changes)
        return dataclasses.replace(self, **changes)

    def changed(self) -> dict[str, Any]:
        """The options that differ from their defaults."""
        default = StepOptions()
        return {n: getattr(self, n) for n in self.names() if getattr(self, n) != getattr(default, n)}


def _checked(who: str, name: str, value: Any) -> Any:
    """``value`` of option ``name``, checked (by trainstack.loop.checks' rules)."""
    if name in ("steps_per_run", "gradient_accumulation_steps"):
        return check_int(who, name, value, minimum=1)
    if name == "record_nonfinite" and value == "loss":
        return value
    note = ("True: the loss and the gradients; 'loss': the loss only; False: no record"
            if name == "record_nonfinite" else None)
    return check_bool(who, name, value, note=note)


def _refuse_unknown(who: str, given: Mapping[str, Any]) -> None:
    unknown = sorted(set(given) - set(StepOptions.names()))
    if unknown:
        raise ArgumentError(f"{who}: unknown step option(s) {unknown}; the step options are "
                            f"{list(StepOptions.names())} (see StepOptions)")


def resolve_step_options(who: str, options: StepOptions | None, given: Mapping[str, Any],
                         unsupported: Mapping[str, str] | None = None) -> StepOptions:
    """The options of trainer ``who``: ``options`` (a StepOptions, or None for the defaults)
    with the keyword arguments ``given`` applied on top, each checked; an option in
    ``unsupported`` (name -> why) set to anything but its default is an error saying why."""
    if options is not None and not isinstance(options, StepOptions):
        raise ArgumentError(f"{who}(options=...) must be a StepOptions, got {options!r:.80} "
                            f"({type(options).__name__})")
    _refuse_unknown(f"{who}()", given)
    resolved = options or StepOptions()
    if given:
        resolved = dataclasses.replace(resolved, **{n: _checked(who, n, v) for n, v in given.items()})
    for name, why in (unsupported or {}).items():
        if name in resolved.changed():
            raise ArgumentError(f"{who}({name}={getattr(resolved, name)!r}): {who} does not support this "
                                f"step option ({why}); leave it at its default, "
                                f"{getattr(StepOptions(), name)!r}")
    return resolved


class StepOption:
    """A trainer attribute that reads one of its :class:`StepOptions` (``trainer.options``); it
    cannot be set: the options are fixed when the trainer is made."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, objtype: type | None = None) -> Any:
        if obj is None:
            return getattr(StepOptions(), self.name)  # the class's default
        options = obj.__dict__.get("options")
        return getattr(options if options is not None else StepOptions(), self.name)

    def __set__(self, obj: Any, value: Any) -> None:
        name = type(obj).__name__
        raise AttributeError(
            f"{name}.{self.name} is a step option, fixed when the trainer is made (the step is built "
            f"from it): pass {name}({self.name}={value!r}) or {name}(options=StepOptions("
            f"{self.name}={value!r}))")
