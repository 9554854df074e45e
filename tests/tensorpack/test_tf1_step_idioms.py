"""tensorpack's global step in graph code follows the steps (issue 23, point 1).

Written as a ported script is (``tfv1`` for TF1 calls, ``get_global_step_var()``,
``launch_train_with_config`` with ``TrainConfig(dataflow=...)``). Each test measures what
training did: a weight under a constant gradient moves by the value the step computed, and
the learning rate recorded by ``tf.summary.scalar('lr', lr)`` is compared with the rate the
optimizer applied (measured from the same weight's moves).
"""
from __future__ import annotations

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from trainstack.callbacks import JSONWriter, ScalarPrinter, TFEventWriter
from trainstack.loop import Callback
from trainstack.tensorpack.tf1 import ModelDesc, SimpleTrainer, get_global_step_var, tfv1
from trainstack.towers import TrainConfig, launch_train_with_config

STEPS_PER_EPOCH = 10  # the schedule halves every 10 steps: at each epoch's end
EPOCHS = 3
STEPS = STEPS_PER_EPOCH * EPOCHS


class WeightTrace(Callback):
    """``w`` before training and after every step: under cost ``w * g`` with SGD, its moves
    are ``lr * g`` as the step computed them."""

    def __init__(self, variable_of):
        self.variable_of, self.values = variable_of, []

    def _before_train(self):
        self.values.append(float(self.variable_of().numpy()[0]))

    def _trigger_step(self):
        self.values.append(float(self.variable_of().numpy()[0]))

    def moves(self):
        return -np.diff(self.values)


def dataflow(n=STEPS_PER_EPOCH):
    return [[np.zeros(2, np.float32)]] * n


def stats(logdir):
    with open(logdir / "stats.jsonl") as f:
        return [json.loads(line) for line in f]


# -- tf.cond and arithmetic on the step in build_graph ---------------------------------------------
class StepDependentCost(ModelDesc):
    """cost = w * g(step): SGD(1.0) moves w by g(step) at each step."""

    def __init__(self):
        self.w = tf.Variable([0.0], name="w")

    def inputs(self):
        return [tf.TensorSpec([None], tf.float32, "x")]

    def build_graph(self, x):
        step = get_global_step_var()
        # tensorpack idioms: a warm-up switch with tf.cond, arithmetic on the step
        warm = tf.cond(step < 10, lambda: tf.constant(1.0), lambda: tf.constant(3.0))
        ramp = tf.cast(step % 4, tf.float32) * 0.25 + tf.cast(step // 8, tf.float32)
        g = tf.identity(warm + ramp, name="g")
        return tf.reduce_sum(self.w * g) + 0.0 * tf.reduce_sum(x)

    def optimizer(self):
        return keras.optimizers.SGD(1.0)


def g_at(step):
    return (1.0 if step < 10 else 3.0) + (step % 4) * 0.25 + step // 8


def test_tf_cond_and_arithmetic_on_the_step_in_build_graph_follow_the_step():
    model = StepDependentCost()
    trace = WeightTrace(lambda: model.w)
    launch_train_with_config(
        TrainConfig(model=model, dataflow=dataflow(8), max_epoch=4, callbacks=[trace], monitors=[]),
        SimpleTrainer())
    # step s (global_step == s while it runs) computes g(s): the warm-up switch flips at 10,
    # the ramp follows s % 4 and s // 8, as tensorpack's global step variable made them
    np.testing.assert_allclose(trace.moves(), [g_at(s) for s in range(32)], rtol=1e-6)
    assert trace.moves()[9] == pytest.approx(1 + 0.25 + 1) and trace.moves()[10] == pytest.approx(3 + 0.5 + 1)


class EpochWeights(Callback):
    """``w`` before training and at each epoch's end."""

    def __init__(self, variable_of):
        self.variable_of, self.values = variable_of, []

    def _before_train(self):
        self.values.append(float(self.variable_of().numpy()[0]))

    def _trigger_epoch(self):
        self.values.append(float(self.variable_of().numpy()[0]))


def test_with_steps_per_run_each_step_of_the_graph_loop_reads_its_own_step():
    # 4 steps per call of the traced step: inside the call's graph loop the step variable
    # advances with each step, so steps 8..11 compute g(8), g(9), g(10), g(11), not g(8) 4 times
    model = StepDependentCost()
    trace = EpochWeights(lambda: model.w)
    launch_train_with_config(
        TrainConfig(model=model, dataflow=dataflow(8), max_epoch=4, callbacks=[trace], monitors=[]),
        SimpleTrainer(steps_per_run=4))
    per_epoch = [sum(g_at(s) for s in range(8 * e, 8 * e + 8)) for e in range(4)]
    np.testing.assert_allclose(-np.diff(trace.values), per_epoch, rtol=1e-6)


# -- tf.summary.scalar('lr', lr) of a schedule on the step ----------------------------------------
class ScheduledLR(ModelDesc):
    """cost = w: SGD(lr) moves w by the LR it applies. tensorpack's optimizer(): the schedule
    on the global step, summarized, given to the optimizer."""

    def __init__(self, where, opt):
        self.w = tf.Variable([0.0], name="w")
        self.where, self.opt = where, opt

    def inputs(self):
        return [tf.TensorSpec([None], tf.float32, "x")]

    def schedule(self):
        return tfv1.train.exponential_decay(0.1, get_global_step_var(), 10, 0.5, staircase=True)

    def build_graph(self, x):
        if self.where == "build_graph":
            tf.summary.scalar("lr", self.schedule())
        return tf.reduce_sum(self.w) + 0.0 * tf.reduce_sum(x)

    def optimizer(self):
        lr = self.schedule()
        if self.where == "optimizer":
            tf.summary.scalar("lr", lr)
        return keras.optimizers.SGD(lr) if self.opt == "keras" else tfv1.train.GradientDescentOptimizer(lr)


def lr_at(step):
    return 0.1 * 0.5 ** (step // 10)


@pytest.mark.parametrize("where, opt", [("optimizer", "keras"), ("optimizer", "tf1"),
                                        ("build_graph", "keras")])
def test_the_summarized_schedule_is_the_rate_the_optimizer_applied(where, opt, tmp_path):
    """tensorpack wrote ``tf.summary.scalar('lr', lr)`` with the epoch's last step (fetched in
    its run): the rate that step applied. The epochs end where the schedule halves, so the
    rate of the next step (the step counter's value after the epoch) would differ."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    model = ScheduledLR(where, opt)
    trace = WeightTrace(lambda: model.w)
    launch_train_with_config(
        TrainConfig(model=model, dataflow=dataflow(), max_epoch=EPOCHS, callbacks=[trace],
                    monitors=[TFEventWriter(str(tmp_path)), JSONWriter(str(tmp_path)), ScalarPrinter()]),
        SimpleTrainer())
    applied = trace.moves()  # the rate each step applied, measured
    np.testing.assert_allclose(applied, [lr_at(s) for s in range(STEPS)], rtol=1e-5)
    last_steps = [STEPS_PER_EPOCH * e - 1 for e in range(1, EPOCHS + 1)]  # 9, 19, 29
    expected = [(s + 1, pytest.approx(applied[s], rel=1e-5)) for s in last_steps]
    assert [(r["global_step"], r["lr"]) for r in stats(tmp_path)] == expected  # JSON monitor
    acc = EventAccumulator(str(tmp_path), size_guidance={"scalars": 0})
    acc.Reload()
    assert [(e.step, e.value) for e in acc.Scalars("lr")] == expected  # TensorBoard
    assert [v for _, v in expected] == [0.1, 0.05, 0.025]


# -- get_global_step_var() under a trainer of the core --------------------------------------------------
class _ReadsTheStep:
    """build_graph reads the step (tensorpack's idiom); its class is a core or a tensorpack ModelDesc."""

    def inputs(self):
        return [tf.TensorSpec([None, 2], tf.float32, "x")]

    def build_graph(self, x):
        self.w = getattr(self, "w", None) or tf.Variable([[1.0], [1.0]], name="w")
        step = tf.cast(get_global_step_var(), tf.float32)
        return tf.reduce_mean(tf.matmul(x, self.w)) + 0.0 * step

    def optimizer(self):
        return keras.optimizers.SGD(0.1)


@pytest.mark.parametrize("model_class", ["core", "tensorpack"])
def test_the_step_read_in_a_tower_a_core_trainer_trains_is_an_error_naming_the_trainer(model_class):
    import trainstack.towers as core
    from trainstack.tensorpack.tf1 import ModelDesc as TensorpackModelDesc

    base = core.ModelDesc if model_class == "core" else TensorpackModelDesc
    model = type("Model", (_ReadsTheStep, base), {})()
    config = core.TrainConfig(model=model, dataflow=[(np.ones((2, 2), "float32"),)] * 2, max_epoch=1,
                              monitors=[], callbacks=[])
    with pytest.raises(RuntimeError, match=r"get_global_step_var\(\).*would stay 0.*"
                                           r"from trainstack\.tensorpack import SimpleTrainer"):
        core.launch_train_with_config(config, core.SimpleTrainer())
