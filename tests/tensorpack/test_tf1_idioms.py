"""tensorpack's idioms inside the trainer behave as they did in tensorpack (issue 23).

Written as a ported script is (the names ``from trainstack import *`` gives, imported from
the layers), ``tfv1`` for TF1 calls, ``launch_train_with_config``; each test measures what training did (the learning rate
applied at given steps, read from how far a weight moved under a constant gradient).
"""
from __future__ import annotations

import math

import keras
import numpy as np
import pytest
import tensorflow as tf

from trainstack.loop import Callback
from trainstack.tensorpack.tf1 import ModelDesc, SimpleTrainer, get_global_step_var, tfv1
from trainstack.towers import TrainConfig, launch_train_with_config

STEPS = 30


class WeightTrace(Callback):
    """The weight after every step: its moves are the learning rates applied (gradient 1)."""

    def __init__(self, variable_of):
        self.variable_of, self.values = variable_of, []

    def _before_train(self):
        self.values.append(float(self.variable_of().numpy()[0]))

    def _trigger_step(self):
        self.values.append(float(self.variable_of().numpy()[0]))

    def applied_lrs(self):
        return -np.diff(self.values)


class ConstantGradient(ModelDesc):
    """cost = w * 1: the gradient of w is 1 at every step, so w moves by the LR."""

    def __init__(self, make_lr):
        self.w = tf.Variable([0.0], name="w")
        self.make_lr = make_lr

    def inputs(self):
        return [tf.TensorSpec([None], tf.float32, "x")]

    def build_graph(self, x):
        return tf.reduce_sum(self.w) + 0.0 * tf.reduce_sum(x)

    def optimizer(self):
        return keras.optimizers.SGD(self.make_lr())


SCHEDULES = {
    "exponential_decay": (lambda: tfv1.train.exponential_decay(0.1, get_global_step_var(), 10, 0.5, staircase=True),
                          lambda s: 0.1 * 0.5 ** (s // 10)),
    "piecewise_constant": (lambda: tfv1.train.piecewise_constant(get_global_step_var(), [5, 20], [0.1, 0.03, 0.01]),
                           lambda s: 0.1 if s <= 5 else 0.03 if s <= 20 else 0.01),
    "cosine_decay": (lambda: tfv1.train.cosine_decay(0.1, get_global_step_var(), STEPS),
                     lambda s: 0.1 * 0.5 * (1 + math.cos(math.pi * min(s, STEPS) / STEPS))),
    "polynomial_decay": (lambda: tfv1.train.polynomial_decay(0.1, get_global_step_var(), STEPS, 0.001, power=2.0),
                         lambda s: (0.1 - 0.001) * (1 - min(s, STEPS) / STEPS) ** 2 + 0.001),
}


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_lr_schedule_on_the_step_counter_follows_the_steps(name):
    make_lr, formula = SCHEDULES[name]
    model = ConstantGradient(make_lr)
    trace = WeightTrace(lambda: model.w)
    launch_train_with_config(
        TrainConfig(model=model, dataflow=[[np.zeros(2, np.float32)]] * STEPS, max_epoch=1,
                    callbacks=[trace], monitors=[]),
        SimpleTrainer())
    applied = trace.applied_lrs()
    assert len(applied) == STEPS
    # step s (global_step == s while it runs) applies the schedule's value at s, as tensorpack's did
    expected = [formula(s) for s in range(STEPS)]
    np.testing.assert_allclose(applied, expected, rtol=1e-4, atol=1e-7)
    assert applied[25] < applied[0]  # it decays: not the value frozen when optimizer() ran


def test_the_step_counter_outside_a_step_is_a_read_only_view_read_when_used():
    view = get_global_step_var()
    assert view.dtype == tf.int64 and not hasattr(view, "assign")
    before = int(view)
    as_float = tf.cast(view, tf.float32)  # converting reads it now
    assert float(as_float) == float(before)
