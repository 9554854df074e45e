"""A schedule that disagrees with its parameter when training starts is a warning (issue 33, part 1).

tensorpack's ScheduledHyperParamSetter, at ``before_train``, sets the value of the current
point (a schedule point), then compares the value the schedule has put in effect by then with
the parameter's, and warns when they differ (setting it with ``set_at_beginning``). The
oracle below is that documented rule, step by step; each run starts before, at, inside and
after the schedule, epoch- and step-based, with and without ``interp='linear'``, through
SimpleTrainer (the optimizer's learning rate) and NoOpTrainer (an ObjAttrParam).
"""
from __future__ import annotations

import logging
import math

import keras
import pytest

from trainstack.callbacks import ModelSaver, ObjAttrParam, ScheduledHyperParamSetter
from trainstack.loop import Callback
from trainstack.towers import LoopStateInit, NoOpTrainer, SimpleTrainer, TrainConfig, launch_train_with_config

from .conftest import TinyClassifier, make_dataflow

SCHEDULE = [(1, 0.2), (3, 0.1), (5, 0.05)]
INITIAL = 0.3
STEPS_PER_EPOCH = 2


def schedule_value_at(point, interp):
    """The value the schedule sets at ``point`` (tensorpack's rule): a point's own value; inside
    a span, the interpolation with ``interp='linear'``; else None (before the first point, after
    the last one, or between points without interpolation)."""
    last = None
    for p, v in SCHEDULE:
        if p == point:
            return v
        if p > point:
            if last is None or interp is None:
                return None
            lp, lv = last
            return lv + (v - lv) * (point - lp) / (p - lp)
        last = (p, v)
    return None


def oracle(start_epoch, max_epoch, step_based, interp, set_at_beginning):
    """(value used by each step, whether before_train warns)."""
    point = (start_epoch - 1) * STEPS_PER_EPOCH if step_based else start_epoch - 1
    value = INITIAL
    exact = schedule_value_at(point, interp)
    if exact is not None:
        value = exact
    in_effect = None
    for p in range(point + 1):
        in_effect = schedule_value_at(p, interp) or in_effect
    warns = in_effect is not None and not math.isclose(in_effect, value, rel_tol=1e-6)
    if warns and set_at_beginning:
        value = in_effect
    used, step = [], point if step_based else (start_epoch - 1) * STEPS_PER_EPOCH
    for epoch in range(start_epoch, max_epoch + 1):
        for _ in range(STEPS_PER_EPOCH):
            used.append(value)
            step += 1
            if step_based and schedule_value_at(step, interp) is not None:
                value = schedule_value_at(step, interp)
        if not step_based and schedule_value_at(epoch, interp) is not None:
            value = schedule_value_at(epoch, interp)
    return used, warns


class Recorder(Callback):
    """The parameter's value when each step starts."""

    def __init__(self, read):
        self.read, self.values = read, []

    def _before_run(self, ctx):
        self.values.append(self.read(self.trainer))


class Holder:
    rate = INITIAL


class LRModel(TinyClassifier):
    def optimizer(self):
        return keras.optimizers.SGD(INITIAL)


# the epoch a run starts (or resumes) at: before the schedule, at a schedule point, inside it
# (between points), after it; a run starting at epoch k > 1 resumes from a run of k - 1 epochs
STARTS = {"epoch": {"before": 1, "at": 4, "inside": 3, "after": 7},
          "step": {"before": 1, "at": 3, "inside": 2, "after": 4}}  # global steps 0, 4, 2, 6


def start_run(trainer_kind, start, tmp_path):
    """(trainer, model, param, read, session_init): a fresh run at epoch 1, else one resuming
    (LoopStateInit: epoch and global step) from a run of ``start - 1`` epochs that had no setter."""
    session_init = None
    if start > 1:
        first = SimpleTrainer() if trainer_kind == "SimpleTrainer" else NoOpTrainer()
        launch_train_with_config(TrainConfig(
            model=LRModel(), dataflow=make_dataflow(STEPS_PER_EPOCH), monitors=[], max_epoch=start - 1,
            callbacks=[ModelSaver(checkpoint_dir=str(tmp_path))], steps_per_epoch=STEPS_PER_EPOCH), first)
        session_init = LoopStateInit(str(tmp_path))
    if trainer_kind == "SimpleTrainer":
        return (SimpleTrainer(), LRModel(), "learning_rate",
                lambda t: float(t.optimizer.learning_rate.numpy()), session_init)
    holder = Holder()
    return NoOpTrainer(), LRModel(), ObjAttrParam(holder, "rate"), lambda t: holder.rate, session_init


@pytest.mark.parametrize("trainer_kind", ["SimpleTrainer", "NoOpTrainer"])
@pytest.mark.parametrize("mode", ["epoch", "step"])
@pytest.mark.parametrize("interp", [None, "linear"])
@pytest.mark.parametrize("where", ["before", "at", "inside", "after"])
def test_start_of_training_checks_the_schedule_as_tensorpack(trainer_kind, mode, interp, where, caplog,
                                                             tmp_path):
    step_based = mode == "step"
    start = STARTS[mode][where]
    max_epoch = start + 1
    trainer, model, param, read, session_init = start_run(trainer_kind, start, tmp_path)
    recorder = Recorder(read)
    setter = ScheduledHyperParamSetter(param, SCHEDULE, interp=interp, step_based=step_based)
    config = TrainConfig(model=model, dataflow=make_dataflow(STEPS_PER_EPOCH), callbacks=[setter, recorder],
                         monitors=[], session_init=session_init, starting_epoch=start, max_epoch=max_epoch,
                         steps_per_epoch=STEPS_PER_EPOCH)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="trainstack"):
        launch_train_with_config(config, trainer)
    assert trainer.loop.starting_epoch == start
    expected, warns = oracle(start, max_epoch, step_based, interp, set_at_beginning=True)
    assert recorder.values == pytest.approx(expected)
    warnings = [r for r in caplog.records if "the schedule gives" in r.getMessage()]
    if warns:
        assert len(warnings) == 1 and warnings[0].levelno == logging.WARNING
        assert warnings[0].name.startswith("trainstack")
        assert "setting it to the schedule's value" in warnings[0].getMessage()
    else:
        assert warnings == []


@pytest.mark.parametrize("interp", [None, "linear"])
def test_without_set_at_beginning_the_warning_stays_and_the_value_too(interp, caplog, tmp_path):
    trainer, model, param, read, session_init = start_run("NoOpTrainer", 7, tmp_path)  # past the end
    recorder = Recorder(read)
    setter = ScheduledHyperParamSetter(param, SCHEDULE, interp=interp, set_at_beginning=False)
    config = TrainConfig(model=model, dataflow=make_dataflow(STEPS_PER_EPOCH), callbacks=[setter, recorder],
                         monitors=[], session_init=session_init, starting_epoch=7, max_epoch=8,
                         steps_per_epoch=STEPS_PER_EPOCH)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="trainstack"):
        launch_train_with_config(config, trainer)
    expected, warns = oracle(7, 8, False, interp, set_at_beginning=False)
    assert warns and recorder.values == pytest.approx(expected)
    (warning,) = [r for r in caplog.records if "the schedule gives" in r.getMessage()]
    assert warning.levelno == logging.WARNING and "left as is" in warning.getMessage()
