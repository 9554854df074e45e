"""steps_per_run: several steps per call of the traced step, with the loop's semantics kept."""
from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from trainstack.callbacks import ProgressBar
from trainstack.inputs import FeedInput, QueueInput, TFDatasetInput
from trainstack.loop import Callback
from trainstack.towers import SimpleTrainer, TrainConfig, launch_train_with_config


class Calls(Callback):
    """What the per-step hooks see: (global_step, local_step, run_size) at trigger_step, and
    the cost fetched from each call."""

    def __init__(self, needs_every_step: bool = False) -> None:
        self.needs_every_step = needs_every_step
        self.triggers: list[tuple[int, int, int]] = []
        self.costs: list[float] = []

    def _before_run(self, ctx):
        return ["cost"]

    def _after_run(self, ctx, values):
        self.costs.append(float(values.results[0]))

    def _trigger_step(self):
        self.triggers.append((self.global_step, self.local_step, self.trainer.loop.run_size))


def dataset(batches):
    return tf.data.Dataset.from_tensor_slices(tuple(np.stack(p) for p in zip(*batches)))


def weights(model):
    return [w.numpy() for w in model.fc.weights]


def train(classifier, trainer, data, callbacks=(), steps=7, epochs=2, **kwargs):
    """Train a new ``classifier()`` (the same initial weights in every run); return the model."""
    keras.utils.set_random_seed(7)
    model = classifier()
    config = TrainConfig(model=model, data=data, callbacks=list(callbacks), steps_per_epoch=steps,
                         max_epoch=epochs, monitors=[], **kwargs)
    launch_train_with_config(config, trainer)
    return model


@pytest.mark.parametrize("make_input", [lambda b: TFDatasetInput(dataset(b)), QueueInput],
                         ids=["dataset", "queue"])
def test_k_steps_per_call_train_like_one_step_per_call(classifier, make_df, make_input):
    batches = make_df(14, seed=3)
    one = train(classifier, SimpleTrainer(), make_input(batches), extra_callbacks=[])
    calls, trainer = Calls(), SimpleTrainer(steps_per_run=3)
    many = train(classifier, trainer, make_input(batches), [calls], extra_callbacks=[])
    for a, b in zip(weights(one), weights(many)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    # 7 steps per epoch in calls of 3, 3 and 1: epochs stay exact, global_step counts steps
    assert trainer.global_step == 14
    assert calls.triggers == [(3, 2, 3), (6, 5, 3), (7, 6, 1), (10, 2, 3), (13, 5, 3), (14, 6, 1)]


def test_fetches_come_from_the_last_step_of_a_call(classifier, make_df):
    batches = make_df(6, seed=4)
    every, grouped = Calls(), Calls()
    train(classifier, SimpleTrainer(), TFDatasetInput(dataset(batches)), [every], steps=6, epochs=1,
          extra_callbacks=[])
    train(classifier, SimpleTrainer(steps_per_run=3), TFDatasetInput(dataset(batches)), [grouped],
          steps=6, epochs=1, extra_callbacks=[])
    np.testing.assert_allclose(grouped.costs, [every.costs[2], every.costs[5]], rtol=1e-5)


def test_a_callback_that_needs_every_step_brings_it_back_to_one(classifier, make_df, caplog):
    calls = Calls(needs_every_step=True)
    trainer = SimpleTrainer(steps_per_run=4)
    with caplog.at_level("INFO", logger="trainstack"):
        train(classifier, trainer, TFDatasetInput(dataset(make_df(5))),
                        [calls], steps=5, epochs=1, extra_callbacks=[])
    assert [t[2] for t in calls.triggers] == [1] * 5 and trainer.global_step == 5
    assert "steps_per_run=4 lowered to 1" in caplog.text and "Calls" in caplog.text


def test_feed_input_runs_one_step_per_call_and_dataflows_get_a_queue(classifier, make_df):
    calls, trainer = Calls(), SimpleTrainer(steps_per_run=4)
    train(classifier, trainer, FeedInput(make_df(5)), [calls], steps=5, epochs=1, extra_callbacks=[])
    assert len(calls.triggers) == 5 and trainer.global_step == 5  # each step needs its own feed
    queued = SimpleTrainer(steps_per_run=4)
    config = TrainConfig(model=classifier(), dataflow=make_df(8), steps_per_epoch=8, max_epoch=1,
                         extra_callbacks=[], monitors=[])
    launch_train_with_config(config, queued)
    assert isinstance(queued.input, QueueInput) and queued.global_step == 8


def test_the_progress_bar_advances_by_the_steps_of_each_call(classifier, make_df, tmp_path):
    out = tmp_path / "bar.txt"
    with open(out, "w") as f:
        bar = ProgressBar(file=f, mininterval=0)
        train(classifier, SimpleTrainer(steps_per_run=4), TFDatasetInput(dataset(make_df(10))), [bar],
              steps=10, epochs=1, extra_callbacks=[])
    text = out.read_text()
    assert "4/10" in text and "8/10" in text and "10/10" in text and "5/10" not in text


def test_steps_per_run_must_be_a_positive_int():
    with pytest.raises(ValueError, match="steps_per_run"):
        SimpleTrainer(steps_per_run=0)
