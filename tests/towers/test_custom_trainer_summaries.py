"""The summaries of a custom trainer's steps reach its monitors, or the run stops naming the scope.

A custom trainer written as users write them (examples/gan_toy.py's style: two optimizers,
two TracedSteps made in ``__init__``, ``run_step`` running both) whose model calls
``add_moving_summary`` with no ``summary_collection_scope`` anywhere: the averages are
recorded into the trainer's collection by default (the trainer's ``__init__`` chooses it), so
``stats.jsonl`` and the monitors hold them, with the values the step computed. A step traced
where the trainer cannot collect it (after ``__init__``, or made before the trainer) would
record into the process-wide default, which the trainer does not read: the first step that
did is an error naming the scope to use, never a silent drop.
"""
from __future__ import annotations

import functools
import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from trainstack.callbacks import add_moving_summary, add_tensor_summary, default_summary_collection
from trainstack.inputs import QueueInput
from trainstack.loop import Callback
from trainstack.towers import ModelDescBase, TowerContext, TowerFunc, TowerTrainer, TracedStep

STEPS = 4


class TwoLosses(ModelDescBase):
    """A tiny GAN-shaped model: two Dense layers, one loss each, both summarized (no names
    given: the tensors' names, as users write it)."""

    def __init__(self) -> None:
        self.a = keras.layers.Dense(1, kernel_initializer="ones")
        self.b = keras.layers.Dense(1, kernel_initializer="ones")

    def inputs(self):
        return [tf.TensorSpec([None, 2], tf.float32, "x")]

    def build_graph(self, x):
        d_loss = tf.identity(tf.reduce_mean(tf.square(self.a(x))), name="d_loss")
        g_loss = tf.identity(tf.reduce_mean(tf.square(self.b(x) - 1.0)), name="g_loss")
        add_moving_summary(d_loss, g_loss)
        add_tensor_summary(self.a.kernel, "mean", name="a_kernel")
        return d_loss, g_loss


class TwoOptimizerTrainer(TowerTrainer):
    """Two steps, each minimizing one loss with its own optimizer; the model's summaries are
    not put under any scope (the steps' bodies never mention summaries). ``plain_g_step``: the
    generator's step is a plain ``tf.function``, traced on its first call, in the loop."""

    def __init__(self, model: TwoLosses, input: QueueInput, plain_g_step: bool = False) -> None:
        super().__init__()
        signature = self.setup_input(model.get_input_signature(), input)
        self.model = model
        self.tower_func = TowerFunc(model.build_graph, signature)
        self.d_opt, self.g_opt = keras.optimizers.SGD(0.1), keras.optimizers.SGD(0.1)
        self.declare_checkpoint_objects(d_optimizer=self.d_opt, g_optimizer=self.g_opt)
        self.losses: list[tuple[float, float]] = []  # (d_loss, g_loss) of each step run, as computed
        feeds = input.feed_signature()
        self.d_step = TracedStep(functools.partial(self._body, "a"), feeds, name="d_step")
        self.g_step = TracedStep(functools.partial(self._body, "b"), feeds, name="g_step")
        self.d_step.trace()
        if plain_g_step:
            self.g_step = tf.function(lambda: self._body("b", {}, ())[0])
        else:
            self.g_step.trace()

    def _body(self, network, feeds, fetch_names):
        with self.input.tracing(feeds):
            inputs = self.input.get_input_tensors(0)
        with TowerContext("tower0", is_training=True) as ctx, tf.GradientTape() as tape:
            d_loss, g_loss = self.tower_func(*inputs)
        loss, opt = (d_loss, self.d_opt) if network == "a" else (g_loss, self.g_opt)
        variables = getattr(self.model, network).trainable_variables
        opt.apply_gradients(zip(tape.gradient(loss, variables), variables))
        handle = self.tower_func.towers[ctx.name]
        return tf.stack([d_loss, g_loss]), {name: handle.get_tensor(name) for name in fetch_names}

    def run_step(self):
        self.losses.append(tuple(float(v) for v in self.hooked_run(self.d_step)))
        self.losses.append(tuple(float(v) for v in self.run(self.g_step)))


class FetchLoss(Callback):
    """Fetches ``d_loss`` on the epoch's last step: a variant of the step traced in the loop."""

    def _before_run(self, ctx):
        return ["d_loss"] if self.local_step == self.trainer.steps_per_epoch - 1 else None


def batches(n: int = STEPS * 2) -> list:
    rng = np.random.default_rng(0)
    return [[rng.normal(size=(4, 2)).astype("float32")] for _ in range(n)]


def ema(values: list[float], decay: float = 0.95) -> float:
    """The zero-debiased moving average add_moving_summary keeps."""
    biased = 0.0
    for v in values:
        biased = decay * biased + (1 - decay) * v
    return biased / (1 - decay ** len(values))


def stats(logdir: str) -> list[dict]:
    with open(os.path.join(logdir, "stats.jsonl")) as f:
        return [json.loads(line) for line in f]


@pytest.fixture
def default_collection():
    """The process-wide default collection, emptied after the test (which records into it)."""
    yield default_summary_collection()
    default_summary_collection().clear()


def test_a_custom_trainers_moving_summaries_reach_stats_jsonl(logger_dir):
    trainer = TwoOptimizerTrainer(TwoLosses(), QueueInput(batches()))
    trainer.train_with_defaults(callbacks=[FetchLoss()], steps_per_epoch=STEPS, max_epoch=2)
    records = stats(logger_dir)
    assert [r["epoch_num"] for r in records] == [1, 2]
    d_losses = [d for d, _ in trainer.losses]
    g_losses = [g for _, g in trainer.losses]
    # both steps build the tower, so each step run updated the averages once (the variant of
    # d_step fetching d_loss, traced in the loop, updates the same ones): the logged values are
    # the averages of what the steps computed, in order
    for epoch, record in enumerate(records, start=1):
        np.testing.assert_allclose(record["d_loss"], ema(d_losses[:2 * STEPS * epoch]), rtol=1e-5)
        np.testing.assert_allclose(record["g_loss"], ema(g_losses[:2 * STEPS * epoch]), rtol=1e-5)
    assert len(set(d_losses)) > 1  # the loss moved: the averages are not a constant
    # the tensor summary too (MergeAllSummaries), and the monitors' history
    np.testing.assert_allclose(records[-1]["a_kernel-mean"], trainer.model.a.kernel.numpy().mean(), rtol=1e-5)
    assert trainer.monitors.get_history("d_loss") == [r["d_loss"] for r in records]
    assert ("d_step", ("d_loss",)) in [(s.name, v) for s in (trainer.d_step,) for v in s.variants]
    assert trainer.summary_collection.moving_average_names == ["d_loss", "g_loss"]


def test_a_function_traced_in_the_loop_is_an_error_naming_the_scope(logger_dir, default_collection):
    # a plain tf.function is traced on its first call, in the loop, where nothing chose a
    # collection: its summaries go to the process-wide default, which the trainer does not report
    trainer = TwoOptimizerTrainer(TwoLosses(), QueueInput(batches()), plain_g_step=True)
    with pytest.raises(RuntimeError) as raised:
        trainer.train_with_defaults(callbacks=[], steps_per_epoch=STEPS, max_epoch=1)
    message = str(raised.value)
    assert "'d_loss'" in message and "'g_loss'" in message and "a_kernel-mean" in message
    assert "summary_collection_scope(trainer.summary_collection)" in message
    assert len(trainer.losses) == 1 and trainer.global_step == 1  # stopped by the first such step


def test_a_step_made_before_the_trainer_is_an_error_before_it_trains(logger_dir, default_collection):
    model = TwoLosses()
    source = QueueInput(batches())
    trainer = TwoOptimizerTrainer(model, source)
    # the seeds' "define the graph before": a step made and traced outside the trainer
    step = TracedStep(functools.partial(trainer._body, "a"), source.feed_signature(), name="outside")
    step.trace()
    assert set(step.default_summaries) >= {"d_loss", "g_loss"}
    assert {"d_loss", "g_loss"} <= set(default_collection.names)
    trainer.d_step = trainer.g_step = step
    with pytest.raises(RuntimeError, match=r"the step 'outside' recorded the summaries .*d_loss"):
        trainer.train_with_defaults(callbacks=[], steps_per_epoch=STEPS, max_epoch=1)
    assert trainer.global_step == 1
