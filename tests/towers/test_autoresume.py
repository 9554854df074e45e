"""AutoResumeTrainConfig: a run interrupted after an epoch continues where its checkpoint left it."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from trainstack.callbacks import JSONWriter, ModelSaver, PeriodicTrigger
from trainstack.loop import Callback
from trainstack.towers import (
    AutoResumeTrainConfig,
    ChainInit,
    CheckpointInit,
    JustCurrentSession,
    LoopStateInit,
    SimpleTrainer,
    launch_train_with_config,
)

STEPS = 3  # steps per epoch in these tests


def weights(model):
    return [model.fc.kernel.numpy(), model.fc.bias.numpy()]


class Interrupt(Callback):
    """Ctrl-C at the end of epoch ``epoch`` (after the callbacks before it, e.g. ModelSaver)."""

    def __init__(self, epoch=None, step=None):
        self.epoch, self.step = epoch, step

    def _trigger_step(self):
        if self.global_step == self.step:
            raise KeyboardInterrupt

    def _trigger_epoch(self):
        if self.epoch_num == self.epoch:
            raise KeyboardInterrupt


class Probe(Callback):
    """Records where the run starts (after initialization) and the epochs it runs."""

    def __init__(self, model):
        self.model = model
        self.epochs = []
        self.first_steps = []

    def _before_train(self):
        self.start_global_step = self.global_step
        self.start_weights = weights(self.model)
        self.optimizer_iterations = int(self.trainer.optimizer.iterations.numpy())

    def _before_epoch(self):
        self.epochs.append(self.epoch_num)

    def _trigger_step(self):
        if len(self.first_steps) < len(self.epochs):
            self.first_steps.append((self.epoch_num, self.local_step))


def run(model, callbacks, max_epoch=4, **kwargs):
    config = AutoResumeTrainConfig(dataflow=kwargs.pop("dataflow"), model=model, callbacks=callbacks,
                                   max_epoch=max_epoch, steps_per_epoch=STEPS, extra_callbacks=[],
                                   monitors=[JSONWriter()], **kwargs)
    trainer = SimpleTrainer()
    launch_train_with_config(config, trainer)
    return config, trainer


def interrupted_run(classifier, df, **interrupt):
    """The first run: ModelSaver each epoch (or each step), Ctrl-C as asked. Returns its model."""
    model = classifier()
    saver = ModelSaver() if "step" not in interrupt else PeriodicTrigger(ModelSaver(), every_k_steps=1)
    with pytest.raises(KeyboardInterrupt):
        run(model, [saver, Interrupt(**interrupt)], dataflow=df)
    return model


def test_resume_after_epoch_2_continues_at_epoch_3(classifier, make_df, logger_dir):
    df = make_df(STEPS)
    first = interrupted_run(classifier, df, epoch=2)
    saved = weights(first)
    assert tf.train.latest_checkpoint(logger_dir).endswith(f"model-{2 * STEPS}")

    model = classifier()  # a fresh model and trainer, as in a restarted process
    probe = Probe(model)
    config, trainer = run(model, [ModelSaver(), probe], dataflow=df)

    assert config.starting_epoch == 3
    assert config.resumed_from.endswith(f"model-{2 * STEPS}")
    assert probe.start_global_step == 2 * STEPS
    assert probe.optimizer_iterations == 2 * STEPS  # the optimizer's state came back too
    for restored, expected in zip(probe.start_weights, saved):
        np.testing.assert_array_equal(restored, expected)
    assert probe.epochs == [3, 4]
    assert (trainer.epoch_num, trainer.global_step) == (4, 4 * STEPS)
    with open(os.path.join(logger_dir, "stats.jsonl")) as f:
        epochs = [json.loads(line)["epoch_num"] for line in f]
    assert epochs[-2:] == [3, 4]


def test_resume_in_the_middle_of_an_epoch(classifier, make_df, logger_dir):
    df = make_df(STEPS)
    # saved, then interrupted, after global step STEPS + 1: the first step of epoch 2
    first = interrupted_run(classifier, df, step=STEPS + 1)
    saved = weights(first)
    model = classifier()
    probe = Probe(model)
    config, trainer = run(model, [probe], max_epoch=3, dataflow=df)
    assert config.starting_epoch == 2
    assert probe.start_global_step == STEPS + 1
    assert probe.epochs == [2, 3]
    assert probe.first_steps[0] == (2, 1)  # epoch 2 goes on with its second step
    for restored, expected in zip(probe.start_weights, saved):
        np.testing.assert_array_equal(restored, expected)
    assert trainer.global_step == 3 * STEPS


def test_resume_takes_priority_over_given_arguments(classifier, make_df, logger_dir):
    df = make_df(STEPS)
    interrupted_run(classifier, df, epoch=1)
    config = AutoResumeTrainConfig(dataflow=df, model=classifier(), starting_epoch=7,
                                   session_init=JustCurrentSession())
    assert config.starting_epoch == 2
    assert isinstance(config.session_init, ChainInit)
    kinds = [type(init) for init in config.session_init.inits]
    assert kinds == [CheckpointInit, LoopStateInit]


def test_given_arguments_win_without_always_resume(classifier, make_df, logger_dir):
    df = make_df(STEPS)
    interrupted_run(classifier, df, epoch=2)
    given = JustCurrentSession()
    config = AutoResumeTrainConfig(always_resume=False, dataflow=df, model=classifier(),
                                   session_init=given, starting_epoch=7)
    assert config.starting_epoch == 7
    assert config.session_init.inits[0] is given

    # what is not given is resumed: the weights here; the run starts at the given epoch with the
    # checkpoint's global_step
    model = classifier()
    probe = Probe(model)
    config, trainer = run(model, [probe], max_epoch=6, dataflow=df, always_resume=False,
                          starting_epoch=5)
    assert isinstance(config.session_init.inits[0], CheckpointInit)
    assert probe.epochs == [5, 6]
    assert probe.start_global_step == 2 * STEPS
    assert trainer.global_step == 4 * STEPS


def test_nothing_to_resume(classifier, make_df, logger_dir, tmp_path):
    df = make_df(STEPS)
    config = AutoResumeTrainConfig(dataflow=df, model=classifier(), starting_epoch=2)
    assert config.resumed_from is None and config.session_init is None and config.starting_epoch == 2
    assert AutoResumeTrainConfig.find_checkpoint() is None
    assert AutoResumeTrainConfig.find_checkpoint(tmp_path / "missing") is None


def test_without_logger_dir_it_is_a_plain_config(classifier, make_df):
    config = AutoResumeTrainConfig(dataflow=make_df(STEPS), model=classifier())
    assert config.resumed_from is None and config.starting_epoch == 1


def test_checkpoint_without_loop_state_takes_the_epoch_from_stats(classifier, make_df, logger_dir,
                                                                   setup):
    """A plain tf.train.Checkpoint of the model (no loop state): tensorpack's way, stats.jsonl."""
    df = make_df(STEPS)
    model = classifier()
    trainer = setup(SimpleTrainer(), model, df)
    model.fc.kernel.assign(tf.fill(model.fc.kernel.shape, 0.5))
    tf.train.CheckpointManager(tf.train.Checkpoint(**trainer.checkpoint_objects), logger_dir,
                               max_to_keep=1, checkpoint_name="model").save()
    with open(os.path.join(logger_dir, "stats.jsonl"), "w") as f:
        f.write(json.dumps({"epoch_num": 4, "global_step": 40}) + "\n")

    model = classifier()
    probe = Probe(model)
    config, trainer = run(model, [probe], max_epoch=5, dataflow=df)
    assert config.starting_epoch == 5 and probe.epochs == [5]
    assert isinstance(config.session_init, CheckpointInit)
    np.testing.assert_array_equal(probe.start_weights[0], np.full((4, 2), 0.5, "float32"))
    assert probe.start_global_step == 0  # unknown without a loop state


def test_finished_run_trains_no_more(classifier, make_df, logger_dir):
    df = make_df(STEPS)
    run(classifier(), [ModelSaver()], max_epoch=2, dataflow=df)
    model = classifier()
    probe = Probe(model)
    config, trainer = run(model, [ModelSaver(), probe], max_epoch=2, dataflow=df)
    assert config.starting_epoch == 3
    assert probe.epochs == [] and trainer.global_step == 2 * STEPS
