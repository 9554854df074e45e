"""PeriodicTrigger, PeriodicCallback and EnableCallbackIf fire at exactly the right times."""
from __future__ import annotations

import pytest

from trainstack.callbacks import EnableCallbackIf, PeriodicCallback, PeriodicTrigger
from trainstack.loop import Callback, Trainer


class Triggered(Callback):
    """Records (epoch, global_step) at each trigger(), and counts its other hooks."""

    def __init__(self):
        self.triggers = []
        self.steps = 0
        self.before_trains = 0

    def _before_train(self):
        self.before_trains += 1

    def _trigger_step(self):
        self.steps += 1

    def _trigger(self):
        self.triggers.append((self.epoch_num, self.global_step))


class Recorder(Callback):
    """Records each per-epoch and per-step hook with the counters when it ran."""

    def __init__(self):
        self.events = []

    def _before_epoch(self):
        self.events.append(("before_epoch", self.epoch_num))

    def _before_run(self, ctx):
        self.events.append(("before_run", self.global_step))
        return "loss"

    def _after_run(self, ctx, values):
        self.events.append(("after_run", self.global_step, values.results))

    def _trigger_step(self):
        self.events.append(("trigger_step", self.global_step))

    def _after_epoch(self):
        self.events.append(("after_epoch", self.epoch_num))

    def _trigger_epoch(self):
        self.events.append(("trigger_epoch", self.epoch_num))

    def hooks(self, name):
        return [e[1] for e in self.events if e[0] == name]


def plain_trainer():
    trainer = Trainer()
    trainer.train_op = lambda: {"loss": 1.0}
    return trainer


# -- PeriodicTrigger -------------------------------------------------------------------
def test_every_k_steps_fires_at_exactly_those_global_steps(linear_trainer):
    cb = Triggered()
    linear_trainer().train([PeriodicTrigger(cb, every_k_steps=3)], [], steps_per_epoch=5, max_epoch=2)
    assert cb.triggers == [(1, 3), (2, 6), (2, 9)]
    assert cb.steps == 10 and cb.before_trains == 1  # its other hooks still run


def test_every_k_epochs_fires_at_exactly_those_epochs():
    cb = Triggered()
    plain_trainer().train([PeriodicTrigger(cb, every_k_epochs=2)], [], steps_per_epoch=3, max_epoch=5)
    assert [e for e, _ in cb.triggers] == [2, 4]


def test_epochs_are_counted_from_the_starting_epoch():
    cb = Triggered()
    plain_trainer().train([PeriodicTrigger(cb, every_k_epochs=2)], [], steps_per_epoch=2,
                          starting_epoch=3, max_epoch=7)
    assert [e for e, _ in cb.triggers] == [4, 6]


def test_steps_and_epochs_together_with_a_later_starting_epoch():
    cb = Triggered()
    plain_trainer().train([PeriodicTrigger(cb, every_k_steps=4, every_k_epochs=2)], [],
                          steps_per_epoch=3, starting_epoch=2, max_epoch=4)
    # global steps 1..9 over epochs 2, 3, 4; epoch triggers after epochs 2 and 4
    assert cb.triggers == [(2, 3), (3, 4), (4, 8), (4, 9)]


def test_before_train_triggers_once_before_the_first_step():
    cb = Triggered()
    plain_trainer().train([PeriodicTrigger(cb, every_k_epochs=3, before_train=True)], [],
                          steps_per_epoch=2, max_epoch=3)
    assert cb.triggers == [(0, 0), (3, 6)]
    cb = Triggered()
    plain_trainer().train([PeriodicTrigger(cb, before_train=True)], [], steps_per_epoch=2, max_epoch=3)
    assert cb.triggers == [(0, 0)]


def test_the_wrapped_epoch_trigger_is_replaced_by_the_schedule():
    cb = Triggered()
    trainer = plain_trainer()
    wrapped = PeriodicTrigger(cb, every_k_steps=100)
    trainer.train([wrapped], [], steps_per_epoch=2, max_epoch=3)
    assert cb.triggers == []
    assert wrapped not in trainer.callbacks.active("trigger_epoch")


def test_periodic_trigger_costs_nothing_on_unused_per_step_hooks():
    class OnlyTrigger(Callback):
        def _trigger(self):
            pass

    trainer = plain_trainer()
    wrapped = PeriodicTrigger(OnlyTrigger(), every_k_epochs=2)
    trainer.train([wrapped], [], steps_per_epoch=2, max_epoch=1)
    group = trainer.callbacks
    assert wrapped in group.active("trigger_epoch")
    for hook in ("before_run", "after_run", "trigger_step", "before_epoch", "before_train"):
        assert wrapped not in group.active(hook), hook
    assert str(wrapped) == "PeriodicTrigger-OnlyTrigger"


@pytest.mark.parametrize("kwargs, match", [
    ({}, "would never trigger"),
    ({"every_k_steps": 0}, "every_k_steps"),
    ({"every_k_epochs": -2}, "every_k_epochs"),
    ({"every_k_steps": 2.5}, "positive integer"),
    ({"every_k_epochs": True}, "positive integer"),
])
def test_periodic_trigger_rejects_bad_periods(kwargs, match):
    with pytest.raises(ValueError, match=match):
        PeriodicTrigger(Triggered(), **kwargs)


def test_periodic_trigger_needs_a_callback_with_a_trigger():
    class NoTrigger(Callback):
        def _trigger_step(self):
            pass

    with pytest.raises(ValueError, match="NoTrigger does not override trigger"):
        PeriodicTrigger(NoTrigger(), every_k_steps=2)
    with pytest.raises(TypeError, match="wraps a Callback"):
        PeriodicTrigger(print, every_k_steps=2)


# -- PeriodicCallback ----------------------------------------------------------------------
def test_periodic_callback_every_k_steps_gates_all_step_hooks(linear_trainer):
    rec = Recorder()
    linear_trainer().train([PeriodicCallback(rec, every_k_steps=2)], [], steps_per_epoch=3, max_epoch=2)
    # before_run sees the steps finished so far; trigger_step sees the step just finished
    assert rec.hooks("before_run") == [0, 2, 4]
    assert rec.hooks("after_run") == [1, 3, 5]  # paired with before_run
    assert all(e[2] is not None for e in rec.events if e[0] == "after_run")
    assert rec.hooks("trigger_step") == [2, 4, 6]
    # epoch hooks too are gated by the global step: it is 0 before epoch 1, 6 after epoch 2
    assert rec.hooks("before_epoch") == [1]
    assert rec.hooks("after_epoch") == rec.hooks("trigger_epoch") == [2]


def test_periodic_callback_every_k_epochs_and_the_last_step():
    rec = Recorder()
    plain_trainer().train([PeriodicCallback(rec, every_k_epochs=2)], [], steps_per_epoch=2, max_epoch=3)
    assert rec.hooks("before_epoch") == [2]
    assert rec.hooks("after_epoch") == [2, 3]
    assert rec.hooks("trigger_epoch") == [2, 3]  # epoch 3 ends training: never skipped
    assert rec.hooks("trigger_step") == [3, 4, 6]  # all of epoch 2, and the very last step


def test_periodic_callback_needs_a_period():
    with pytest.raises(ValueError, match="needs every_k_steps, every_k_epochs or both"):
        PeriodicCallback(Recorder())
    with pytest.raises(ValueError, match="every_k_epochs"):
        PeriodicCallback(Recorder(), every_k_epochs=0)


# -- EnableCallbackIf ------------------------------------------------------------------------
def test_enable_callback_if_keeps_before_and_after_run_paired():
    rec = Recorder()
    # true before even steps run, false right after them: after_run must follow before_run anyway
    gate = EnableCallbackIf(rec, lambda self: self.global_step % 2 == 0)
    plain_trainer().train([gate], [], steps_per_epoch=5, max_epoch=1)
    assert rec.hooks("before_run") == [0, 2, 4]
    assert rec.hooks("after_run") == [1, 3, 5]
    assert rec.hooks("trigger_step") == [2, 4]


def test_enable_callback_if_gates_an_after_run_only_callback():
    class AfterRunOnly(Callback):
        def __init__(self):
            self.seen = []

        def _after_run(self, ctx, values):
            self.seen.append(self.global_step)

    cb = AfterRunOnly()
    trainer = plain_trainer()
    gate = EnableCallbackIf(cb, lambda self: self.global_step >= 3)
    trainer.train([gate], [], steps_per_epoch=5, max_epoch=1)
    assert cb.seen == [4, 5]
    assert gate in trainer.callbacks.active("before_run")


def test_enable_callback_if_leaves_train_level_hooks_alone():
    cb = Triggered()
    trainer = plain_trainer()
    trainer.train([EnableCallbackIf(cb, lambda self: False)], [], steps_per_epoch=2, max_epoch=2)
    assert cb.before_trains == 1 and cb.steps == 0 and cb.triggers == []
    with pytest.raises(TypeError, match="pred"):
        EnableCallbackIf(cb, pred=True)
