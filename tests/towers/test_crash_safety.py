"""Crash safety (issue 15): a damaged latest checkpoint is skipped for the one before it, NaN
weights never replace a good checkpoint, and the errors name the last good checkpoint."""
from __future__ import annotations

import glob
import logging
import math
import os

import numpy as np
import pytest
import tensorflow as tf

from trainstack.callbacks import MinSaver, ModelSaver, PeriodicTrigger, TerminateOnNaN
from trainstack.loop import Callback
from trainstack.towers import AutoResumeTrainConfig, ResumeError, SimpleTrainer, TrainConfig, launch_train_with_config


class PoisonAt(Callback):
    """Writes NaN into the model's kernel at the end of global step ``step``."""

    def __init__(self, model, step):
        self.model, self.step = model, step

    def _trigger_step(self):
        if self.global_step == self.step:
            self.model.fc.kernel.assign(tf.fill(self.model.fc.kernel.shape, math.nan))


def train(model, df, callbacks, max_epoch=2, config_type=TrainConfig, **options):
    config = config_type(dataflow=df, model=model, callbacks=callbacks, extra_callbacks=[], monitors=[],
                         max_epoch=max_epoch, steps_per_epoch=3, **options)
    trainer = SimpleTrainer()
    launch_train_with_config(config, trainer)
    return trainer


def test_a_damaged_latest_checkpoint_is_skipped_for_the_one_before(classifier, make_df, logger_dir,
                                                                    caplog):
    train(classifier(), make_df(3), [ModelSaver()], max_epoch=2)
    latest = tf.train.latest_checkpoint(logger_dir)
    assert latest.endswith("model-6")
    (data,) = glob.glob(latest + ".data-*")
    with open(data, "r+b") as f:  # a disk that lost the end of the write
        f.truncate(os.path.getsize(data) // 2)
    with caplog.at_level(logging.WARNING, logger="trainstack.towers"):
        config = AutoResumeTrainConfig(dataflow=make_df(3), model=classifier(), max_epoch=3)
    assert config.resumed_from.endswith("model-3")
    assert "model-6 cannot be read" in caplog.text


def test_no_readable_checkpoint_is_an_error_naming_it(classifier, make_df, logger_dir):
    train(classifier(), make_df(3), [ModelSaver()], max_epoch=1)
    for path in glob.glob(os.path.join(logger_dir, "model-*.data-*")):
        os.remove(path)
    with pytest.raises(ResumeError, match=r"none of them can be read.*model-3: .*No such file"):
        AutoResumeTrainConfig(dataflow=make_df(3), model=classifier(), max_epoch=2)


def test_model_saver_never_saves_nan_weights_and_stops_naming_the_last_good_one(
        classifier, make_df, logger_dir, caplog):
    model = classifier()
    with caplog.at_level(logging.ERROR, logger="trainstack.callbacks"):
        trainer = train(model, make_df(3), [PoisonAt(model, 4),
                                            PeriodicTrigger(ModelSaver(), every_k_steps=1)], max_epoch=3,
                        on_nonfinite="stop")
    assert trainer.global_step == 4  # stopped at the first save of NaN weights
    assert tf.train.latest_checkpoint(logger_dir).endswith("model-3")
    restored = tf.train.load_variable(os.path.join(logger_dir, "model-3"),
                                      "model/fc/_kernel/.ATTRIBUTES/VARIABLE_VALUE")
    assert np.isfinite(restored).all()
    assert "not saving global_step 4: model/" in caplog.text
    assert "The last good checkpoint is " + os.path.join(logger_dir, "model-3") in caplog.text


def test_min_saver_keeps_its_best_checkpoint_when_the_weights_turn_nan(classifier, make_df, logger_dir):
    model = classifier()

    class Stat(Callback):
        def _trigger_epoch(self):  # improves every epoch: MinSaver would save each time
            self.trainer.monitors.put_scalar("val", 10.0 - self.epoch_num)

    saver = MinSaver("val")
    train(model, make_df(3), [PoisonAt(model, 5), Stat(), saver], max_epoch=3, on_nonfinite="stop")
    assert saver.best == 9.0  # epoch 1's model; epoch 2's had NaN weights and was refused
    assert tf.train.latest_checkpoint(saver.directory).endswith("model-3")


def test_terminate_on_nan_names_the_step_and_the_last_good_checkpoint(classifier, make_df, logger_dir,
                                                                       caplog):
    model = classifier()
    with caplog.at_level(logging.ERROR, logger="trainstack.callbacks"):
        trainer = train(model, make_df(3), [ModelSaver(), PoisonAt(model, 4), TerminateOnNaN(["cost"])],
                        max_epoch=3, on_nonfinite="stop")
    assert trainer.global_step == 5  # step 5 computes its cost with the poisoned kernel
    assert "'cost' is nan at global_step 5" in caplog.text
    assert "The last good checkpoint is " + os.path.join(logger_dir, "model-3") in caplog.text


@pytest.mark.parametrize("hook, saved", [("_trigger_step", "model-3"), ("_trigger_epoch", "model-6")])
def test_a_failing_callback_is_named_with_its_hook_and_nothing_saved_is_lost(classifier, make_df,
                                                                             logger_dir, hook, saved):
    # it fails from global step 4 on: in epoch 2's first step, or at epoch 2's end (after the
    # ModelSaver before it saved that epoch)
    class Broken(Callback):
        pass

    def fail(self):
        if self.global_step >= 4:
            raise ValueError("boom")

    setattr(Broken, hook, fail)
    with pytest.raises(ValueError, match="boom") as info:
        train(classifier(), make_df(3), [ModelSaver(), Broken()], max_epoch=3)
    assert any("Broken" in note and hook.lstrip("_") in note for note in getattr(info.value, "__notes__", []))
    assert tf.train.latest_checkpoint(logger_dir).endswith(saved)
