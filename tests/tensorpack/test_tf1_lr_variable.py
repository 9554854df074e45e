"""tensorpack's learning-rate variable (issue 23, point 2), in a model written as tensorpack's.

tensorpack's standard ``optimizer()``::

    lr = tf.compat.v1.get_variable('learning_rate', initializer=0.1, trainable=False)
    tf.summary.scalar('lr', lr)
    return tf.compat.v1.train.MomentumOptimizer(lr, 0.9)   # or a Keras optimizer

with ``ScheduledHyperParamSetter('learning_rate', ...)``. For the variable made by
``get_variable`` (in ``optimizer()``, inside the TF1 room) and by ``tf.Variable``, given to a
Keras optimizer (which Keras 3 refuses outside the room) and to a TF1 one, these tests check
the learning rate each step applied (the weights against SGD's / TF1 momentum's rule in NumPy
with the scheduled rates), that the setter set the script's own variable, the values the
monitors got each epoch (stats.jsonl), and that a checkpoint holds the variable: a resumed run
continues exactly like an uninterrupted one, and without a setter starts from the saved rate.
"""
from __future__ import annotations

import json
import types
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

from trainstack.callbacks import JSONWriter, ModelSaver, ScheduledHyperParamSetter
from trainstack.loop import Callback
from trainstack.tensorpack.tf1 import ModelDesc, SimpleTrainer
from trainstack.towers import AutoResumeTrainConfig, TrainConfig, launch_train_with_config

W0 = np.array([0.5, -0.3, 0.2], np.float32)
STEPS, EPOCHS = 3, 4
SCHEDULE = [(1, 0.05), (3, 0.01)]  # tensorpack's: set after epoch 1 and after epoch 3
START_LR = 0.1


def make_data(seed=0):
    rng = np.random.default_rng(seed)
    data = []
    for _ in range(STEPS):
        x = rng.normal(size=(8, 3)).astype(np.float32)
        data.append((x, (x @ np.array([1.0, 2.0, -1.0]) + 0.1 * rng.normal(size=8)).astype(np.float32)))
    return data


DATA = make_data()


def learning_rate(form):
    if form == "get_variable":
        return tf.compat.v1.get_variable("learning_rate", initializer=START_LR, trainable=False)
    return tf.Variable(START_LR, trainable=False, name="learning_rate")


class Model(ModelDesc):
    """``cost = mean((x . W - y)^2)``, ``W`` a TF1 variable; ``optimizer()`` as tensorpack's."""

    def __init__(self, form, kind):
        self.form, self.kind = form, kind
        self.made = types.SimpleNamespace(lr=None)  # not tracked: only the optimizer holds the variable

    def inputs(self):
        return [tf.TensorSpec([None, 3], tf.float32, "x"), tf.TensorSpec([None], tf.float32, "y")]

    def build_graph(self, x, y):
        self.w = tf.compat.v1.get_variable("W", initializer=W0)
        return tf.reduce_mean(tf.square(tf.reduce_sum(x * self.w, axis=1) - y), name="cost")

    def optimizer(self):
        lr = self.made.lr = learning_rate(self.form)
        tf.summary.scalar("lr", lr)
        if self.kind == "keras":
            return keras.optimizers.SGD(lr)
        return tf.compat.v1.train.MomentumOptimizer(lr, 0.9)


class Weights(Callback):
    def __init__(self, model):
        self.model, self.seen = model, []

    def _trigger_step(self):
        self.seen.append(self.model.w.numpy().copy())


def scheduled(schedule=SCHEDULE, start=START_LR, epochs=EPOCHS):
    """The learning rate of each step: set after epoch ``e`` of each ``(e, value)``."""
    lrs, lr = [], start
    for epoch in range(1, epochs + 1):
        lrs += [lr] * STEPS
        lr = dict(schedule).get(epoch, lr)
    return lrs


def expected(kind, lrs):
    """The weights after each step: SGD's ``w -= lr*g``, TF1 momentum's ``a = 0.9a + g; w -= lr*a``."""
    w, accum, out = W0.astype(np.float64), np.zeros(3), []
    for k, lr in enumerate(lrs):
        x, y = (a.astype(np.float64) for a in DATA[k % STEPS])
        g = 2.0 / len(y) * x.T @ (x @ w - y)
        accum = 0.9 * accum + g
        w = w - lr * (g if kind == "keras" else accum)
        out.append(w)
    return out


def train(model, logdir, callbacks, max_epoch=EPOCHS, config=TrainConfig):
    trainer = SimpleTrainer()
    launch_train_with_config(config(model=model, dataflow=DATA, max_epoch=max_epoch, callbacks=list(callbacks),
                                    monitors=[JSONWriter(str(logdir))]), trainer)
    return trainer


def stats(logdir):
    with open(logdir / "stats.jsonl") as f:
        return [json.loads(line) for line in f]


FORMS = [(form, kind) for form in ("get_variable", "tf.Variable") for kind in ("keras", "tf1-momentum")]


@pytest.mark.parametrize("form, kind", FORMS)
def test_the_optimizer_follows_the_variable_the_setter_sets_by_name(form, kind, tmp_path):
    model = Model(form, kind)
    weights = Weights(model)
    trainer = train(model, tmp_path, [ScheduledHyperParamSetter("learning_rate", SCHEDULE), weights])
    lrs = scheduled()
    assert lrs[:STEPS] == [0.1] * STEPS and lrs[-STEPS:] == [0.01] * STEPS
    for k, (got, want) in enumerate(zip(weights.seen, expected(kind, lrs), strict=True)):
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6, err_msg=f"step {k + 1}")
    # the setter assigned the script's own variable, which the optimizer reads
    assert trainer.optimizer.learning_rate is model.made.lr
    assert model.made.lr.numpy() == pytest.approx(0.01)
    # the monitors: the summary 'lr' (the rate the epoch's last step ran with) each epoch, and the
    # setter's 'learning_rate' at the start and when it changed
    rows = stats(tmp_path)
    assert [r["epoch_num"] for r in rows] == [0, 1, 2, 3, 4]
    assert [r.get("lr") for r in rows[1:]] == pytest.approx([lrs[STEPS * e - 1] for e in range(1, EPOCHS + 1)])
    assert [r.get("learning_rate") for r in rows] == pytest.approx([0.1, 0.05, None, 0.01, None])


@pytest.mark.parametrize("form, kind", [("get_variable", "keras"), ("tf.Variable", "tf1-momentum")])
def test_the_checkpoint_holds_the_variable_and_a_resumed_run_continues_exactly(form, kind, logger_dir, tmp_path):
    whole = Model(form, kind)
    train(whole, tmp_path / "whole", [ScheduledHyperParamSetter("learning_rate", SCHEDULE)])

    first = Model(form, kind)  # epochs 1-2 then 3 with a checkpoint after each, in the logger directory
    train(first, Path(logger_dir), [ModelSaver(), ScheduledHyperParamSetter("learning_rate", SCHEDULE)],
          max_epoch=2, config=AutoResumeTrainConfig)
    latest = tf.train.latest_checkpoint(logger_dir)
    saved = {name: tf.train.load_variable(latest, name) for name, shape in tf.train.list_variables(latest)
             if "learning_rate" in name and shape == []}
    assert list(saved.values()) == pytest.approx([0.05])  # the rate set after epoch 1, one variable

    second = Model(form, kind)  # a new process: resumes after epoch 2
    weights = Weights(second)
    train(second, Path(logger_dir), [ModelSaver(), ScheduledHyperParamSetter("learning_rate", SCHEDULE), weights],
          config=AutoResumeTrainConfig)
    assert len(weights.seen) == 2 * STEPS
    np.testing.assert_array_equal(second.w.numpy(), whole.w.numpy())
    assert second.made.lr.numpy() == whole.made.lr.numpy() == pytest.approx(0.01)
    np.testing.assert_allclose(weights.seen[-1], expected(kind, scheduled())[-1], rtol=2e-5, atol=1e-6)

    third = Model(form, kind)  # resumed from epoch 4's checkpoint, with no setter: the saved rate
    train(third, Path(logger_dir), [], max_epoch=EPOCHS + 1, config=AutoResumeTrainConfig)
    assert third.made.lr.numpy() == pytest.approx(0.01)
