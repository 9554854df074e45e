"""TerminateOnNaN and EarlyStopping end training cleanly, at the right moment."""
from __future__ import annotations

import logging
import math

import pytest

from trainstack.callbacks import CallbackFactory, EarlyStopping, PeriodicTrigger, TerminateOnNaN
from trainstack.loop import Callback, NonFiniteError, Trainer


class Ends(Callback):
    """Counts step triggers and epoch triggers, and whether after_train ran."""

    def __init__(self):
        self.steps, self.epochs, self.finalized = 0, [], False

    def _trigger_step(self):
        self.steps += 1

    def _trigger_epoch(self):
        self.epochs.append(self.epoch_num)

    def _after_train(self):
        self.finalized = True


def poison_loss_after(step, value=math.nan):
    """A callback that sets the fixture's loss offset to ``value`` once ``step`` steps ran."""
    class Poison(Callback):
        def _trigger_step(self):
            if self.global_step == step:
                self.trainer.loss_offset.assign(value)
    return Poison()


# -- TerminateOnNaN ------------------------------------------------------------------------
@pytest.mark.parametrize("bad, shown", [(math.nan, "nan"), (math.inf, "inf")])
def test_a_non_finite_loss_stops_right_after_its_step(linear_trainer, caplog, bad, shown):
    caplog.set_level(logging.INFO)
    trainer = linear_trainer()
    ends = Ends()
    with pytest.raises(NonFiniteError, match=f"'loss' is {shown} at global_step 4"):  # after after_train
        trainer.train([poison_loss_after(3, bad), TerminateOnNaN(), ends], [],
                      steps_per_epoch=3, max_epoch=3)

    assert trainer.global_step == 4 and trainer.epoch_num == 2
    assert ends.steps == 3  # the bad step's trigger_step did not run
    assert ends.finalized
    message = f"TerminateOnNaN: 'loss' is {shown} at global_step 4 (epoch 2, local step 0)"
    assert any(r.levelno == logging.ERROR and message in r.getMessage() for r in caplog.records)
    # the trainer reports the clean stop with the reason
    assert any("stopped by StopTraining" in r.getMessage() and message in r.getMessage()
               for r in caplog.records)


def test_finite_values_train_to_the_end(linear_trainer):
    trainer = linear_trainer()
    trainer.train([TerminateOnNaN(["loss", "w_norm"])], [], steps_per_epoch=4, max_epoch=2)
    assert trainer.global_step == 8


def test_check_every_k_steps_checks_only_those_steps(linear_trainer):
    trainer = linear_trainer()
    trainer.train([poison_loss_after(1), TerminateOnNaN(check_every_k_steps=3)], [],
                  steps_per_epoch=5, max_epoch=2, on_nonfinite="stop")
    assert trainer.global_step == 3  # bad from step 2 on, seen at the first checked step


def test_only_checked_steps_fetch():
    class CountingStep:
        def __init__(self):
            self.fetched = []

        def run_with_fetches(self, args, fetches, feeds):
            self.fetched.append(tuple(fetches))
            return None, {n: 1.0 for n in fetches}

    trainer = Trainer()
    trainer.train_op = step = CountingStep()
    trainer.train([TerminateOnNaN(check_every_k_steps=2)], [], steps_per_epoch=3, max_epoch=2)
    assert step.fetched == [(), ("loss",)] * 3


@pytest.mark.parametrize("kwargs, error, match", [
    ({"names": "loss"}, TypeError, "non-empty list of value names"),
    ({"names": []}, TypeError, "non-empty list of value names"),
    ({"check_every_k_steps": 0}, ValueError, "check_every_k_steps"),
])
def test_terminate_on_nan_rejects_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        TerminateOnNaN(**kwargs)


# -- EarlyStopping -------------------------------------------------------------------------
def put_each_epoch(values, name="val_loss"):
    """A callback putting ``values[i]`` as ``name`` after the i-th epoch."""
    return CallbackFactory(
        trigger=lambda cb: cb.trainer.monitors.put_scalar(name, values[cb.epoch_num - 1]))


def plain_trainer():
    trainer = Trainer()
    trainer.train_op = lambda: {"loss": 1.0}
    return trainer


def test_stops_after_patience_epochs_without_improvement():
    trainer = plain_trainer()
    ends = Ends()
    stopper = EarlyStopping(patience=3)
    trainer.train([put_each_epoch([5.0, 4.0, 4.5, 4.2, 4.1, 1.0, 1.0, 1.0]), stopper, ends], [],
                  steps_per_epoch=2, max_epoch=8)
    assert trainer.epoch_num == 5
    assert ends.epochs == [1, 2, 3, 4, 5]  # the last epoch's later callbacks still ran
    assert ends.finalized
    assert (stopper.best, stopper.best_epoch) == (4.0, 2)


def test_mode_max_and_min_delta():
    trainer = plain_trainer()
    trainer.train([put_each_epoch([0.5, 0.55, 0.59, 0.68, 0.9], "acc"),
                   EarlyStopping("acc", mode="max", patience=2, min_delta=0.1)], [],
                  steps_per_epoch=1, max_epoch=5)
    # 0.55 and 0.59 are not 0.1 better than 0.5: two bad checks
    assert trainer.epoch_num == 3

    trainer = plain_trainer()
    trainer.train([put_each_epoch([0.5, 0.7, 0.9, 1.1], "acc"), EarlyStopping("acc", "max", 1, 0.1)],
                  [], steps_per_epoch=1, max_epoch=4)
    assert trainer.epoch_num == 4


def test_patience_zero_stops_at_the_first_bad_epoch_and_nan_is_bad():
    trainer = plain_trainer()
    trainer.train([put_each_epoch([3.0, 2.0, math.nan, 1.0]), EarlyStopping(patience=0)], [],
                  steps_per_epoch=1, max_epoch=4)
    assert trainer.epoch_num == 3


def test_a_statistic_computed_every_few_epochs_is_judged_once_per_value():
    trainer = plain_trainer()
    values = [None, 2.0, None, 3.0, None, 3.0, None, 3.0]
    validation = PeriodicTrigger(put_each_epoch(values), every_k_epochs=2)
    trainer.train([validation, EarlyStopping(patience=2)], [], steps_per_epoch=1, max_epoch=8)
    assert trainer.epoch_num == 6  # bad values at epochs 4 and 6, not 4 and 5


def test_a_statistic_that_never_appears_warns_once(caplog):
    caplog.set_level(logging.WARNING, logger="trainstack.callbacks")
    trainer = plain_trainer()
    trainer.train([put_each_epoch([1.0] * 4, "loss_val"), EarlyStopping(patience=1)], [],
                  steps_per_epoch=1, max_epoch=4)
    assert trainer.epoch_num == 4
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "'val_loss'" in warnings[0] and "loss_val" in warnings[0]


@pytest.mark.parametrize("kwargs, match", [
    ({"mode": "minimum"}, "mode"), ({"patience": -1}, "patience"), ({"patience": 1.5}, "patience"),
    ({"min_delta": -0.1}, "min_delta"), ({"min_delta": math.nan}, "min_delta"),
])
def test_early_stopping_rejects_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        EarlyStopping(**kwargs)
    with pytest.raises(TypeError, match="monitor"):
        EarlyStopping(monitor=None)


def test_a_non_finite_element_of_an_array_stops_too(caplog):
    trainer = Trainer()
    # the second step (1 step finished before it) returns an infinite element
    trainer.train_op = lambda: {"grads": [1.0, math.inf if trainer.global_step == 1 else 0.0, 2.0]}
    with pytest.raises(NonFiniteError):
        trainer.train([TerminateOnNaN(["grads"])], [], steps_per_epoch=5, max_epoch=1)
    assert trainer.global_step == 2
    assert any("'grads' is 1 non-finite of 3 elements at global_step 2" in r.getMessage()
               for r in caplog.records)
