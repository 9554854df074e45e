"""Hyperparameter targets and setters, driving the learning rate of a real Keras optimizer."""
from __future__ import annotations

import logging

import pytest
import tensorflow as tf

from trainstack.callbacks import (
    HumanHyperParamSetter,
    HyperParamSetterWithFunc,
    NamedParam,
    ObjAttrParam,
    OptimizerParam,
    ScheduledHyperParamSetter,
    StatMonitorParamSetter,
    TFVariableParam,
)
from trainstack.loop import Callback

approx = pytest.approx


class PutStat(Callback):
    """Puts ``values[epoch - 1]`` as scalar ``name`` at each epoch."""

    def __init__(self, name, values):
        self.stat_name, self.values = name, values

    def _trigger(self):
        self.trainer.monitors.put_scalar(self.stat_name, self.values[self.epoch_num - 1])


def test_step_based_schedule_sets_the_rate_from_the_scheduled_step(linear_trainer):
    trainer = linear_trainer(learning_rate=0.5)
    setter = ScheduledHyperParamSetter("learning_rate", [(0, 0.1), (3, 0.01)], step_based=True)
    trainer.train([setter], [], steps_per_epoch=3, max_epoch=2)
    # seen_learning_rates[i] is the rate used by the step with global_step i (before it ran):
    # (3, 0.01) is set once 3 steps have run, so step 3 is the first with 0.01
    assert trainer.seen_learning_rates == approx([0.1] * 3 + [0.01] * 3)
    assert trainer.monitors.get_history("learning_rate") == approx([0.1, 0.01])
    assert setter in trainer.callbacks.active("trigger_step")
    assert setter not in trainer.callbacks.active("trigger_epoch")


def test_epoch_based_linear_interpolation(linear_trainer):
    trainer = linear_trainer()
    setter = ScheduledHyperParamSetter(OptimizerParam(), [(0, 0.1), (4, 0.02)], interp="linear")
    trainer.train([setter], [], steps_per_epoch=2, max_epoch=6)
    # epoch e runs with the value of point e - 1; nothing after the last point
    per_epoch = [0.1, 0.08, 0.06, 0.04, 0.02, 0.02]
    assert trainer.seen_learning_rates == approx([v for v in per_epoch for _ in range(2)])
    assert trainer.monitors.get_history("learning_rate") == approx(per_epoch[:5])
    assert setter not in trainer.callbacks.active("trigger_step")


def test_epoch_based_schedule_without_interp(linear_trainer):
    trainer = linear_trainer()
    trainer.train([ScheduledHyperParamSetter("learning_rate", [(0, 0.2), (2, 0.05)])], [],
                  steps_per_epoch=1, max_epoch=4)
    assert trainer.seen_learning_rates == approx([0.2, 0.2, 0.05, 0.05])


@pytest.mark.parametrize("set_at_beginning, expected", [(True, 0.05), (False, 0.3)])
def test_resumed_run_gets_the_value_in_effect(linear_trainer, caplog, set_at_beginning, expected):
    trainer = linear_trainer(learning_rate=0.3)
    setter = ScheduledHyperParamSetter("learning_rate", [(0, 0.1), (1, 0.05)],
                                       set_at_beginning=set_at_beginning)
    with caplog.at_level(logging.INFO, logger="trainstack.callbacks"):
        trainer.train([setter], [], steps_per_epoch=1, starting_epoch=3, max_epoch=3)
    assert trainer.seen_learning_rates == approx([expected])
    assert "the schedule gives learning_rate=0.05 at epoch 2" in caplog.text


def test_setter_with_func(linear_trainer):
    trainer = linear_trainer()
    trainer.train([HyperParamSetterWithFunc("learning_rate", lambda e, old: 0.1 / (e + 1))], [],
                  steps_per_epoch=1, max_epoch=3)
    assert trainer.seen_learning_rates == approx([0.1, 0.05, 0.1 / 3])


def test_stat_monitor_decays_when_the_stat_stops_improving(linear_trainer):
    trainer = linear_trainer()
    setter = StatMonitorParamSetter("learning_rate", "val-error", lambda x: x * 0.5,
                                    threshold=0, last_k=2)
    trainer.train([PutStat("val-error", [5, 4, 4, 4, 4, 4]), setter], [],
                  steps_per_epoch=1, max_epoch=6)
    # [5, 4] improved; [4, 4] after epoch 3 did not -> halve, start again; [4, 4] after epoch 5
    assert trainer.seen_learning_rates == approx([0.1, 0.1, 0.1, 0.05, 0.05, 0.025])
    assert float(trainer.optimizer.learning_rate.numpy()) == approx(0.025)


def test_stat_monitor_warns_without_new_data(linear_trainer, caplog):
    trainer = linear_trainer()
    setter = StatMonitorParamSetter("learning_rate", "val-error", lambda x: x * 0.5,
                                    threshold=0, last_k=1)
    with caplog.at_level(logging.WARNING, logger="trainstack.callbacks"):
        trainer.train([setter], [], steps_per_epoch=1, max_epoch=1)
    assert "no value of 'val-error'" in caplog.text
    assert trainer.seen_learning_rates == approx([0.1])


def test_human_setter_reads_the_file_in_the_logger_dir(linear_trainer, logger_dir, caplog):
    path = f"{logger_dir}/hyper.txt"

    class EditFile(Callback):
        def _trigger(self):
            if self.epoch_num == 1:
                with open(path, "w") as f:
                    f.write("# tuned by hand\nmomentum: 0.9\nlearning_rate: 0.05\n")
            elif self.epoch_num == 2:
                with open(path, "w") as f:
                    f.write("momentum: 0.9\nbad line\n")

    trainer = linear_trainer()
    with caplog.at_level(logging.WARNING, logger="trainstack.callbacks"):
        trainer.train([EditFile(), HumanHyperParamSetter("learning_rate")], [],
                      steps_per_epoch=1, max_epoch=3)
    assert trainer.seen_learning_rates == approx([0.1, 0.05, 0.05])
    assert "hyper.txt does not exist" in caplog.text  # at before_train
    assert "'bad line' is not 'name:number'" in caplog.text
    assert "has no line 'learning_rate:<value>'" in caplog.text


def test_variable_params_by_object_and_by_name(linear_trainer):
    class WithDecay(linear_trainer):
        def __init__(self):
            super().__init__()
            self.decay = tf.Variable(0.0, name="decay")

        @property
        def checkpoint_objects(self):
            return {**super().checkpoint_objects, "decay": self.decay}

    trainer = WithDecay()
    offset = TFVariableParam(trainer.loss_offset)
    trainer.train([ScheduledHyperParamSetter(offset, [(0, 1.5)]),
                   ScheduledHyperParamSetter("decay", [(0, 0.25), (1, 0.5)])], [],
                  steps_per_epoch=1, max_epoch=2)
    assert trainer.loss_offset.numpy() == 1.5
    assert trainer.decay.numpy() == 0.5
    assert trainer.monitors.get_history("loss_offset") == [1.5]
    assert trainer.monitors.get_history("decay") == [0.25, 0.5]


def test_obj_attr_param(linear_trainer):
    class Knob:
        level = 1

    knob = Knob()
    trainer = linear_trainer()
    trainer.train([HyperParamSetterWithFunc(ObjAttrParam(knob, "level", "knob"),
                                            lambda e, old: old * 2)], [],
                  steps_per_epoch=1, max_epoch=2)
    assert knob.level == 8  # before_train, then after epochs 1 and 2
    assert trainer.monitors.get_history("knob") == [2, 4, 8]


def test_name_resolution_errors(linear_trainer):
    trainer = linear_trainer()
    with pytest.raises(TypeError, match="SGD.momentum is 0.0 .float., not a variable.*constant"):
        NamedParam("momentum").setup(trainer)
    with pytest.raises(LookupError, match=r"no variable named 'nope'.*known: \['b', 'sgd(_\d+)?/iteration', "
                                           r"'sgd(_\d+)?/learning_rate', 'w'\]"):
        NamedParam("nope").setup(trainer)
    with pytest.raises(ValueError, match=r"TFVariableParam: a hyperparameter must be a scalar variable; w:0 has shape \(3, 1\)"):
        TFVariableParam(trainer.w)
    with pytest.raises(ValueError, match="must be a scalar variable"):
        TFVariableParam("w").setup(trainer)
    with pytest.raises(RuntimeError, match="not set up yet"):
        NamedParam("learning_rate").get_value()
    counter = TFVariableParam(tf.Variable(3, dtype=tf.int64, name="k"))
    counter.set_value(5.0)
    assert counter.get_value() == 5
    with pytest.raises(ValueError, match="int64 variable; cannot set it to 2.5"):
        counter.set_value(2.5)
    with pytest.raises(AttributeError, match="has no attribute 'levle'"):
        ObjAttrParam(object(), "levle")

    scheduled = linear_trainer()
    schedule = tf.keras.optimizers.schedules.ExponentialDecay(0.1, decay_steps=10, decay_rate=0.9)
    scheduled.optimizer = tf.keras.optimizers.SGD(learning_rate=schedule)
    with pytest.raises(TypeError, match="LearningRateSchedule"):
        scheduled.setup_callbacks([ScheduledHyperParamSetter("learning_rate", [(0, 0.1)])], [])


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(schedule=[]), ValueError, "empty"),
    (dict(schedule=[(1.5, 0.1)]), ValueError, "non-negative integer, got 1.5 .*entry"),
    (dict(schedule=[(1, 0.1), (1, 0.2)]), ValueError, "more than once"),
    (dict(schedule=[(1, "0.1")]), TypeError, "must be a number"),
    (dict(schedule=[1, 2]), TypeError, "not an .* pair"),
    (dict(schedule=[(0, 0.1)], interp="cubic"), ValueError, "interp"),
    (dict(schedule=[(0, 0.1)], param=3), TypeError, "HyperParam or a name"),
])
def test_bad_schedules(kwargs, error, match):
    kwargs.setdefault("param", "learning_rate")
    with pytest.raises(error, match=match):
        ScheduledHyperParamSetter(**kwargs)
