"""The monitors' state in ModelSaver's checkpoints (issue 34): a run resumed from a checkpoint
decides and logs as the uninterrupted run does; a checkpoint written before checkpoints held
that state, or a state that no longer fits its callback, still resumes (afresh, logged)."""
from __future__ import annotations

import logging

import pytest
import tensorflow as tf

from trainstack.callbacks import (
    CallbackFactory,
    EarlyStopping,
    ModelSaver,
    SimpleMovingAverage,
    StatMonitorParamSetter,
    load_loop_state,
    restore_loop_state,
)

#: the statistic each epoch puts: best at epoch 2, then no improvement (EarlyStopping stops at 5)
VALUES = [5.0, 4.0, 4.5, 4.2, 4.1, 4.3]


def put_each_epoch(name="val"):
    return CallbackFactory(trigger=lambda cb: cb.trainer.monitors.put_scalar(name, VALUES[cb.epoch_num - 1]))


def callbacks(directory, last_k=2):
    # ModelSaver first: its epoch-end checkpoint must still hold what the later callbacks did
    stopper = EarlyStopping("val", patience=3)
    setter = StatMonitorParamSetter("learning_rate", "val", lambda lr: lr * 0.5, threshold=0.0, last_k=last_k)
    return [ModelSaver(checkpoint_dir=directory), put_each_epoch(), stopper, setter], stopper, setter


def run(trainer, directory, max_epoch, resume_from=None, **kwargs):
    if resume_from is not None:
        restore_loop_state(trainer, directory / resume_from)
    cbs, stopper, setter = callbacks(str(directory), **kwargs)
    trainer.train(cbs, [], steps_per_epoch=2, max_epoch=max_epoch)
    return stopper, setter


def test_a_resumed_run_stops_and_changes_params_when_the_uninterrupted_run_does(linear_trainer, tmp_path):
    whole = linear_trainer()
    stopper, setter = run(whole, tmp_path / "whole", max_epoch=6)
    assert whole.epoch_num == 5  # stopped by EarlyStopping: 3 checks without beating 4.0
    assert whole.monitors.get_history("learning_rate") == pytest.approx([0.1, 0.05])  # halved at epoch 3

    run(linear_trainer(), tmp_path / "split", max_epoch=2)
    resumed = linear_trainer()
    resumed_stopper, resumed_setter = run(resumed, tmp_path / "split", max_epoch=6, resume_from="model-4")
    assert resumed.epoch_num == 5
    assert (resumed_stopper.best, resumed_stopper.best_epoch, resumed_stopper.bad_checks) == (
        stopper.best, stopper.best_epoch, stopper.bad_checks) == (4.0, 2, 3)
    # the learning rate halves at epoch 3 (values 4.0, 4.5: no improvement), as in the whole run
    assert resumed.seen_learning_rates == pytest.approx(whole.seen_learning_rates[4:])
    assert list(resumed_setter.history) == list(setter.history)


def test_a_checkpoint_without_monitor_state_resumes_afresh_with_an_info_line(linear_trainer, tmp_path, caplog):
    run(linear_trainer(), tmp_path / "new", max_epoch=2)
    state = load_loop_state(tmp_path / "new")
    # a checkpoint as ModelSaver wrote them before: model and loop state only
    old = tmp_path / "old"
    trainer = linear_trainer()
    loop_state = tf.Module()
    for key, value in state.items():
        setattr(loop_state, key, tf.Variable(value, dtype=tf.bool if isinstance(value, bool) else tf.int64))
    tf.train.Checkpoint(**trainer.checkpoint_objects, loop_state=loop_state).write(str(old / "model-4"))

    with caplog.at_level(logging.INFO, logger="trainstack.callbacks"):
        stopper, _ = run(trainer, old, max_epoch=6, resume_from="model-4")
    assert "holds no monitor state" in caplog.text
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING and "monitor" in r.getMessage()]
    assert trainer.epoch_num == 6 and stopper.best == 4.1  # afresh: 4.5 at epoch 3 was its first best


def test_a_state_that_no_longer_fits_its_callback_is_a_warning_and_starts_afresh(linear_trainer, tmp_path,
                                                                               caplog):
    run(linear_trainer(), tmp_path, max_epoch=2)
    with caplog.at_level(logging.INFO, logger="trainstack.callbacks"):
        stopper, setter = run(linear_trainer(), tmp_path, max_epoch=3, resume_from="model-4", last_k=3)
    assert "StatMonitorParamSetter(learning_rate)" in caplog.text and "does not fit" in caplog.text
    assert list(setter.history) == [4.5]  # afresh: only the value of epoch 3
    assert stopper.best == 4.0  # the other callbacks' state was restored


def test_simple_moving_average_window_round_trip(tmp_path):
    sma = SimpleMovingAverage(["loss", "acc"], window_size=3)
    for row in ([1.0, 0.1], [2.0, 0.2], [3.0, 0.3], [4.0, 0.4]):
        sma._window.append(row)
    path = tf.train.Checkpoint(s=sma.checkpoint_state()).write(str(tmp_path / "ckpt"))
    again = SimpleMovingAverage(["loss", "acc"], window_size=3)
    tf.train.Checkpoint(s=again.checkpoint_state()).read(path).assert_consumed()
    again.load_checkpoint_state()
    assert list(again._window) == [[2.0, 0.2], [3.0, 0.3], [4.0, 0.4]]
