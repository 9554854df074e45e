"""Faults in the data and on the disk (issue 15): a bad datapoint is reported by its position in
the pass, an exception in the dataflow names where it happened, a NaN in the data stops
training before it reaches a checkpoint, and a checkpoint directory that cannot be written stops
the run with an error naming the last good checkpoint. In every case what was saved before stays."""
from __future__ import annotations

import json
import logging
import os

import numpy as np
import pytest
import tensorflow as tf

from trainstack.callbacks import JSONWriter, ModelSaver, StorageError, TerminateOnNaN
from trainstack.inputs import FeedInput, InputSignatureError, QueueInput, TFDatasetInput
from trainstack.loop import Callback
from trainstack.towers import SimpleTrainer, TrainConfig, launch_train_with_config

STEPS = 3


class Faulty:
    """``batches``, with ``fault(datapoint)`` applied to datapoint ``index`` of pass ``pass_num``."""

    def __init__(self, batches, pass_num, index, fault):
        self.batches, self.at, self.fault, self.passes = batches, (pass_num, index), fault, 0

    def __len__(self):
        return len(self.batches)

    def __iter__(self):
        pass_num, self.passes = self.passes, self.passes + 1
        for i, dp in enumerate(self.batches):
            yield self.fault(dp) if (pass_num, i) == self.at else dp


def wrong_shape(dp):
    return dp[0][:, :3], dp[1]


def raises(dp):
    raise RuntimeError("cannot decode image")


def nan(dp):
    return np.full_like(dp[0], np.nan), dp[1]


def train(model, data, callbacks=(), max_epoch=3, **options):
    config = TrainConfig(data=data, model=model, callbacks=list(callbacks), extra_callbacks=[],
                         monitors=[JSONWriter()], max_epoch=max_epoch, steps_per_epoch=STEPS, **options)
    trainer = SimpleTrainer()
    launch_train_with_config(config, trainer)
    return trainer


def records(logdir):
    with open(os.path.join(logdir, "stats.jsonl")) as f:
        return [json.loads(line) for line in f]


@pytest.mark.parametrize("make_input", [FeedInput, QueueInput, TFDatasetInput])
def test_a_datapoint_of_the_wrong_shape_is_reported_by_its_position(classifier, make_df, logger_dir,
                                                                   make_input):
    df = Faulty(make_df(STEPS), pass_num=1, index=2, fault=wrong_shape)
    with pytest.raises((InputSignatureError, tf.errors.InvalidArgumentError),
                       match=r"input 'x' expects .*\[datapoint 2 of pass 1 of the dataflow"):
        train(classifier(), make_input(df), [ModelSaver()])
    # epoch 1 was saved and its statistics written; nothing of it was lost
    assert tf.train.latest_checkpoint(logger_dir).endswith("model-3")
    assert [r["epoch_num"] for r in records(logger_dir)][-1] == 1


def test_an_exception_in_the_dataflow_names_the_datapoint_it_was_producing(classifier, make_df,
                                                                          logger_dir):
    df = Faulty(make_df(STEPS), pass_num=1, index=1, fault=raises)
    with pytest.raises(RuntimeError, match="cannot decode image") as info:
        train(classifier(), FeedInput(df), [ModelSaver()])
    assert any("while producing datapoint 1 of pass 1" in n for n in info.value.__notes__)
    assert tf.train.latest_checkpoint(logger_dir).endswith("model-3")


def test_nan_in_the_data_stops_training_before_a_checkpoint_has_nan(classifier, make_df, logger_dir,
                                                                    caplog):
    df = Faulty(make_df(STEPS), pass_num=1, index=0, fault=nan)
    with caplog.at_level(logging.ERROR, logger="trainstack.callbacks"):
        trainer = train(classifier(), FeedInput(df), [ModelSaver(), TerminateOnNaN(["cost"])],
                        on_nonfinite="stop")
    assert trainer.global_step == 4  # the first step of epoch 2 got the NaN batch
    assert "'cost' is nan at global_step 4" in caplog.text
    assert tf.train.latest_checkpoint(logger_dir).endswith("model-3")


def test_a_checkpoint_directory_that_cannot_be_written_stops_the_run_naming_the_last_good_one(
        classifier, make_df, tmp_path, logger_dir):
    ckpt = str(tmp_path / "ckpt")

    class BreakTheDirectory(Callback):  # epoch 2: the directory becomes a file
        def _trigger_epoch(self):
            if self.epoch_num == 2:
                os.rename(ckpt, ckpt + ".away")
                open(ckpt, "w").close()

    trainer = SimpleTrainer()
    config = TrainConfig(data=FeedInput(make_df(STEPS)), model=classifier(), extra_callbacks=[],
                         callbacks=[BreakTheDirectory(), ModelSaver(checkpoint_dir=ckpt)],
                         monitors=[JSONWriter()], max_epoch=3, steps_per_epoch=STEPS)
    with pytest.raises(StorageError) as info:
        launch_train_with_config(config, trainer)
    message = str(info.value)
    assert f"could not write the checkpoint {ckpt}/model-6" in message
    assert "is not a directory" in message
    assert f"The last good checkpoint is {ckpt}/model-3." in message
    assert trainer.global_step == 2 * STEPS  # epoch 3 never ran: the run stopped at the failed save
    os.remove(ckpt)
    os.rename(ckpt + ".away", ckpt)
    assert tf.train.latest_checkpoint(ckpt).endswith("model-3")  # what was saved before stays
