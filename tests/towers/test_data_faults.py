"""Faults in the data and on the disk (issue 15): a bad datapoint is reported by its position in
the pass, an exception in the dataflow names where it happened, a NaN in the data stops
training before it reaches a checkpoint, and a checkpoint directory that cannot be written is
logged without stopping training. In every case what was saved before stays."""
from __future__ import annotations

import json
import logging
import os

import numpy as np
import pytest
import tensorflow as tf

from trainstack.callbacks import JSONWriter, ModelSaver, TerminateOnNaN
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


def test_a_checkpoint_directory_that_cannot_be_written_is_logged_and_training_goes_on(
        classifier, make_df, tmp_path, logger_dir, caplog):
    ckpt = str(tmp_path / "ckpt")

    class BreakTheDirectory(Callback):  # epoch 2: the directory is a file; epoch 3: it is back
        def _trigger_epoch(self):
            if self.epoch_num == 2:
                os.rename(ckpt, ckpt + ".away")
                open(ckpt, "w").close()
            elif self.epoch_num == 3:
                os.remove(ckpt)
                os.rename(ckpt + ".away", ckpt)

    with caplog.at_level(logging.ERROR, logger="trainstack.callbacks"):
        trainer = train(classifier(), FeedInput(make_df(STEPS)),
                        [BreakTheDirectory(), ModelSaver(checkpoint_dir=ckpt)])
    assert trainer.global_step == 3 * STEPS
    assert f"ModelSaver could not write a checkpoint in {ckpt}" in caplog.text
    saved = sorted(p for p in os.listdir(ckpt) if p.endswith(".index"))
    assert saved == ["model-3.index", "model-9.index"]
    assert tf.train.latest_checkpoint(ckpt).endswith("model-9")
