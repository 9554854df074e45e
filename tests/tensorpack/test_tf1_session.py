"""TF1 sessions with a trainer (issue 23, point 9): what cannot work fails at once, naming the call
and what replaces it; a ``with tf.compat.v1.Session():`` block around the training code works as
the ``with tf.Graph().as_default():`` block does.

Written as a ported script is (``tfv1``, ``launch_train_with_config``, ``TrainConfig(dataflow=)``,
a tensorpack-style trainer building its graph in ``__init__``).
"""
from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from trainstack.tensorpack.input_source import FeedInput
from trainstack.tensorpack.tf1 import (
    ModelDesc,
    SimpleTrainer,
    TF1CallError,
    TowerContext,
    TowerFunc,
    TowerTrainer,
    tfv1,
)
from trainstack.towers import TrainConfig, launch_train_with_config

REPLACEMENT = r"hooked_sess\.run\(fn\)"
SESSION_INIT = tf.compat.v1.Session.__init__  # TensorFlow's own


class Model(ModelDesc):
    """cost = w . x, SGD(0.5); ``session`` (set by a test) is called in build_graph or optimizer()."""

    def __init__(self, in_build_graph=None, in_optimizer=None):
        self.fc = keras.layers.Dense(1, use_bias=False, kernel_initializer="ones", name="fc")
        self.in_build_graph, self.in_optimizer = in_build_graph, in_optimizer

    def inputs(self):
        return [tf.TensorSpec([None, 2], tf.float32, "x")]

    def build_graph(self, x):
        cost = tf.reduce_mean(self.fc(x), name="cost")
        if self.in_build_graph:
            self.in_build_graph()
        return cost

    def optimizer(self):
        if self.in_optimizer:
            self.in_optimizer()
        return keras.optimizers.SGD(0.5)


def dataflow(n=4):
    return [[np.ones((3, 2), np.float32)]] * n


def train(model, max_epoch=1, trainer=None):
    trainer = trainer or SimpleTrainer()
    launch_train_with_config(TrainConfig(model=model, dataflow=dataflow(), max_epoch=max_epoch, monitors=[]),
                             trainer)
    return trainer


@pytest.mark.parametrize("make, cls", [(lambda: tfv1.Session(graph=tf.Graph()), "Session"),
                                       (lambda: tf.compat.v1.InteractiveSession(), "InteractiveSession")])
def test_a_session_in_build_graph_fails_at_once_naming_the_call_and_its_replacement(make, cls):
    model, trainer = Model(in_build_graph=make), SimpleTrainer()
    with pytest.raises(TF1CallError, match=rf"tf\.compat\.v1\.{cls}\(\) was called while tower 'tower0' was "
                                           rf"built \(build_graph\).*{REPLACEMENT}"):
        train(model, trainer=trainer)
    # at once: refused while the step was traced, before any step ran
    assert trainer.global_step == 0 and trainer.train_op is None
    # outside the trace, TensorFlow's own again
    assert tf.compat.v1.Session.__init__ is SESSION_INIT
    with tfv1.Session(graph=tf.Graph()) as sess:
        assert isinstance(sess, tf.compat.v1.Session)


def test_a_session_in_optimizer_fails_at_once():
    with pytest.raises(TF1CallError, match=rf"tf\.compat\.v1\.Session\(\) was called while a trainer was built "
                                           rf"\(its optimizer\(\).*{REPLACEMENT}"):
        train(Model(in_optimizer=lambda: tfv1.Session()))


def test_a_session_in_a_tensorpack_style_trainers_init_fails_at_once():
    class SessionTrainer(TowerTrainer):  # tensorpack's TF1 habit: a session for the trainer
        def __init__(self, input, model):
            super().__init__()
            self.register_callback(input.setup(model.get_input_signature()))
            self.tower_func = TowerFunc(model.build_graph, model.inputs())
            with TowerContext('', is_training=True):
                cost = self.tower_func(*input.get_input_tensors())
            self.train_op = model.optimizer().minimize(cost, var_list=model.fc.trainable_variables)
            self.my_sess = tfv1.Session()

    with pytest.raises(TF1CallError, match=rf"tf\.compat\.v1\.Session\(\) was called while a trainer was "
                                           rf"built.*{REPLACEMENT}"):
        SessionTrainer(FeedInput(dataflow()), Model())


def test_training_inside_a_session_block_works_as_written():
    """A TF1 script's ``with tf.Session() as sess:`` around the training code: the trainer runs
    as outside it (as inside ``with tf.Graph().as_default():``); the session stays usable for
    the script's graph code."""
    model = Model()
    with tfv1.Session() as sess:
        two = tf.constant(2.0)
        trainer = train(model, max_epoch=2)
        assert tfv1.get_default_session() is sess and not tf.executing_eagerly()
        assert sess.run(two + 1.0) == 3.0
    assert trainer.global_step == 8
    # cost = mean(x . w) with x = ones: the gradient of each weight is 1, SGD(0.5): w = 1 - 8 * 0.5
    np.testing.assert_allclose(model.fc.kernel.numpy(), np.full((2, 1), 1.0 - 8 * 0.5), rtol=1e-6)
