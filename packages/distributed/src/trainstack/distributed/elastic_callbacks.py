"""Callbacks under elastic Horovod: chief-only callbacks that follow rank 0, and the resize hook.

In an elastic job rank 0 can die and another process becomes rank 0. So that
the chief-only callbacks (ModelSaver, the progress bar, the logger-directory
writers...) keep working, ElasticHorovodTrainer keeps them on *every* rank,
each wrapped in a :class:`ChiefGate` that lets their hooks through only on the
rank that is rank 0 at that moment. A process that becomes rank 0 first gets
the callback's ``before_train`` (its ``setup_graph`` ran on every rank), then
the hooks from the rolled-back epoch on; the callbacks' saved state (what
``ModelSaver`` keeps for exact resume) comes from the old rank 0 through the
committed training state.

The resize hook is a protocol, as the stateful callbacks' is: a callback (or a
callback a wrapper holds) with a method ``on_world_size_change(old_size,
new_size)`` has it called on every rank after a membership change, once the
state is rolled back (after a failure) and synchronized from rank 0, before the
next step. :class:`ScaleLearningRateOnResize` is the usual case.
"""
from __future__ import annotations

import logging
from typing import Any

from trainstack.callbacks import ProxyCallback, tf_private
from trainstack.loop import Callback, MonitorBase, RunArgs, RunContext, RunValues, Trainer

__all__ = ["ChiefGate", "ChiefGatedMonitor", "ScaleLearningRateOnResize", "notify_world_size_change"]

logger = logging.getLogger("trainstack.distributed")


class ChiefGate(ProxyCallback):
    """Keeps a chief-only callback on every rank; its hooks run only on the current rank 0."""

    _name_prefix = "ChiefGate"

    def __init__(self, cb: Callback) -> None:
        super().__init__(cb)
        self._chief_only = False  # the gate itself runs everywhere
        self._started = False     # whether the wrapped callback had its before_train here

    def _active(self) -> bool:
        """Whether this rank is rank 0 now; the first time, give the callback its before_train."""
        if not self.trainer.is_chief:
            return False
        if not self._started:
            self._started = True
            if self.trainer.global_step > 0:  # taking over from a rank 0 that died
                logger.info("%s: this process is rank 0 now; %s runs here from global step %d on.",
                            self.name, self.cb.name, self.trainer.global_step)
            self.cb.before_train()
        return True

    def _setup_graph(self) -> None:
        self.cb.setup_graph(self.trainer)

    def _before_train(self) -> None:
        self._active()  # gives the before_train on rank 0

    def _before_epoch(self) -> None:
        if self._active():
            self.cb.before_epoch()

    def _before_run(self, ctx: RunContext) -> RunArgs | None:
        return self.cb.before_run(ctx) if self._active() else None

    def _after_run(self, run_context: RunContext, run_values: RunValues) -> None:
        if self._active():
            self.cb.after_run(run_context, run_values)

    def _trigger_step(self) -> None:
        if self._active():
            self.cb.trigger_step()

    def _after_epoch(self) -> None:
        if self._active():
            self.cb.after_epoch()

    def _trigger_epoch(self) -> None:
        if self._active():
            self.cb.trigger_epoch()

    def _trigger(self) -> None:
        if self._active():
            self.cb.trigger()

    def _after_train(self) -> None:
        if self._started and self.trainer.is_chief:
            self.cb.after_train()


class ChiefGatedMonitor(ChiefGate, MonitorBase):
    """A :class:`ChiefGate` for a monitor that writes into the shared logger directory
    (JSONWriter, TFEventWriter): only the current rank 0 writes, and it receives the data."""

    cb: MonitorBase

    def __init__(self, monitor: MonitorBase) -> None:
        if not isinstance(monitor, MonitorBase):
            raise TypeError(f"ChiefGatedMonitor wraps a monitor, got {monitor!r} ({type(monitor).__name__})")
        super().__init__(monitor)

    def process_scalar(self, name: str, value: float | int) -> None:
        if self.trainer.is_chief and self._started:
            self.cb.process_scalar(name, value)

    def process_image(self, name: str, value: Any) -> None:
        if self.trainer.is_chief and self._started:
            self.cb.process_image(name, value)

    def process_event(self, event: Any) -> None:
        if self.trainer.is_chief and self._started:
            self.cb.process_event(event)


def _unwrapped(cb: Callback) -> list[Callback]:
    chain = [cb]
    while isinstance(inner := getattr(chain[-1], "cb", None), Callback) and len(chain) < 100:
        chain.append(inner)
    return chain


def notify_world_size_change(trainer: Trainer, old_size: int, new_size: int) -> list[str]:
    """Call ``on_world_size_change(old_size, new_size)`` of every callback of ``trainer`` that
    has one (wrapped ones included), in the callbacks' order; return their names."""
    called = []
    for top in trainer.callbacks.cbs:
        for cb in _unwrapped(top):
            hook = getattr(cb, "on_world_size_change", None)
            if callable(hook):
                hook(old_size, new_size)
                called.append(cb.name)
    return called


class ScaleLearningRateOnResize(Callback):
    """Scale the optimizer's learning rate with the world size: ``lr *= new_size / old_size``
    after each membership change of an elastic Horovod job (the linear scaling rule for a
    total batch that grows and shrinks with the number of ranks).

    The learning rate must be a number or a variable (``keras.optimizers.SGD(0.1)``), not a
    schedule. It is an optimizer variable, so it is part of the committed state: a rollback
    restores the rate committed with the state, and the scaling is applied from the size that
    state was committed at. Runs on every rank.
    """

    _chief_only = False

    def _setup_graph(self) -> None:
        optimizer = getattr(self.trainer, "optimizer", None)
        if optimizer is None or not hasattr(optimizer, "learning_rate"):
            raise TypeError(f"{self.name} needs a trainer with a Keras optimizer (trainer.optimizer), "
                            f"got {type(self.trainer).__name__} with optimizer {optimizer!r}")
        if tf_private.learning_rate_is_schedule(optimizer):
            raise TypeError(f"{self.name} scales a learning rate that is a number or a variable; "
                            f"{type(optimizer).__name__}'s is a schedule: "
                            "scale the schedule itself with the world size instead")

    def on_world_size_change(self, old_size: int, new_size: int) -> None:
        optimizer = self.trainer.optimizer  # type: ignore[attr-defined]  # checked in _setup_graph
        old_lr = float(optimizer.learning_rate.numpy() if hasattr(optimizer.learning_rate, "numpy")
                       else optimizer.learning_rate)
        optimizer.learning_rate = old_lr * new_size / old_size
        logger.info("%s: %d -> %d ranks: learning rate %.6g -> %.6g.", self.name, old_size, new_size,
                    old_lr, old_lr * new_size / old_size)
