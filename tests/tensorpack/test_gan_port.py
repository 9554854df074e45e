"""tensorpack's GAN trainers (examples/GAN/GAN.py), ported by changing imports and TF1 layer code.

The trainers build their graph in ``__init__`` as tensorpack's do (a TowerContext
entered outside any traced function, the input's tensors, ``minimize`` on the
model's losses under ``tf.control_dependencies``); trainstack records it and
traces it into the trainer's steps. Each test runs in a thread with a timeout:
building a graph eagerly on a QueueInput used to block forever in a dequeue.
"""
from __future__ import annotations

import functools
import threading

import keras
import numpy as np
import pytest
import tensorflow as tf

from trainstack.callbacks import ModelSaver, add_moving_summary
from trainstack.inputs import InputSignatureError
from trainstack.loop import Callback
from trainstack.tensorpack.input_source import QueueInput
from trainstack.tensorpack.tf1 import (
    GraphBuildError,
    ModelDescBase,
    TowerContext,
    TowerFunc,
    TowerTrainer,
    minimize,
)
from trainstack.towers import OfflinePredictor, PredictConfig, SmartInit, TracedStep

BATCH = 16
NOISE = 4
TIMEOUT = 120


# -- the model, as a port of tensorpack's GANModelDesc / a ConditionalGAN-like model ---------------
class GANModelDesc(ModelDescBase):
    def collect_variables(self):
        self.g_vars = self.gen.trainable_variables
        self.d_vars = self.discrim.trainable_variables

    def build_losses(self, logits_real, logits_fake):
        with tf.name_scope("GAN_loss"):
            with tf.name_scope("discrim"):
                d_loss_pos = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(
                    logits=logits_real, labels=tf.ones_like(logits_real)), name='loss_real')
                d_loss_neg = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(
                    logits=logits_fake, labels=tf.zeros_like(logits_fake)), name='loss_fake')
                self.d_loss = tf.add(.5 * d_loss_pos, .5 * d_loss_neg, name='loss')
            with tf.name_scope("gen"):
                self.g_loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(
                    logits=logits_fake, labels=tf.ones_like(logits_fake)), name='loss')
            add_moving_summary(self.g_loss, self.d_loss)

    @functools.cache
    def get_optimizer(self):
        return self.optimizer()


class Model(GANModelDesc):
    def __init__(self):
        self.gen = keras.Sequential([keras.layers.Dense(8, activation="relu"), keras.layers.Dense(2)],
                                    name="generator")
        self.discrim = keras.Sequential([keras.layers.Dense(8, activation="relu"), keras.layers.Dense(1)],
                                        name="discriminator")

    def inputs(self):
        return [tf.TensorSpec((None, 2), tf.float32, 'real')]

    def build_graph(self, real):
        z = tf.random.uniform([BATCH, NOISE], -1, 1, name='z_train')
        z = tf.compat.v1.placeholder_with_default(z, [None, NOISE], name='z')
        fake = tf.identity(self.gen(z), name='gen')
        self.build_losses(self.discrim(real), self.discrim(fake))
        self.collect_variables()

    def optimizer(self):
        return keras.optimizers.Adam(1e-2, beta_1=0.5)


# -- the trainers, as tensorpack's (only the imports changed) -----------------------------------------
class GANTrainer(TowerTrainer):
    def __init__(self, input, model):
        super().__init__()
        cbs = input.setup(model.get_input_signature())
        self.register_callback(cbs)
        self.tower_func = TowerFunc(model.build_graph, model.inputs())
        with TowerContext('', is_training=True):
            self.tower_func(*input.get_input_tensors())
        opt = model.get_optimizer()
        with tf.name_scope('optimize'):
            g_min = opt.minimize(model.g_loss, var_list=model.g_vars, name='g_op')
            with tf.control_dependencies([g_min]):
                d_min = opt.minimize(model.d_loss, var_list=model.d_vars, name='d_op')
        self.train_op = d_min


class SeparateGANTrainer(TowerTrainer):
    def __init__(self, input, model, d_period=1, g_period=1):
        super().__init__()
        self._d_period = int(d_period)
        self._g_period = int(g_period)
        assert min(d_period, g_period) == 1
        cbs = input.setup(model.get_input_signature())
        self.register_callback(cbs)
        self.tower_func = TowerFunc(model.build_graph, model.inputs())
        with TowerContext('', is_training=True):
            self.tower_func(*input.get_input_tensors())
        opt = model.get_optimizer()
        with tf.name_scope('optimize'):
            self.d_min = opt.minimize(model.d_loss, var_list=model.d_vars, name='d_min')
            self.g_min = opt.minimize(model.g_loss, var_list=model.g_vars, name='g_min')

    def run_step(self):
        if self.global_step % (self._d_period) == 0:
            self.hooked_sess.run(self.d_min)
        if self.global_step % (self._g_period) == 0:
            self.hooked_sess.run(self.g_min)


class RingData:
    """Batches of 2-D points around (1, -1)."""

    def __init__(self, n=10, seed=0):
        self.n, self.rng = n, np.random.default_rng(seed)

    def __len__(self):
        return self.n

    def __iter__(self):
        for _ in range(self.n):
            yield [(self.rng.normal(size=(BATCH, 2)) * 0.1 + [1.0, -1.0]).astype(np.float32)]


def in_thread(fn, timeout=TIMEOUT):
    """Run ``fn`` in a thread; fail (instead of hanging the suite) when it does not end in time."""
    result, error = [], []

    def target():
        try:
            result.append(fn())
        except BaseException as e:  # noqa: BLE001
            error.append(e)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout)
    assert not thread.is_alive(), f"{fn} did not finish in {timeout} s (hangs?)"
    if error:
        raise error[0]
    return result[0]


def values(variables):
    return [np.array(v.numpy()) for v in variables]


def changed(before, after):
    return all(not np.allclose(b, a) for b, a in zip(before, after))


def test_gan_trainer_tensorpack_form_trains_on_queue_input(tmp_path):
    model = Model()
    trainer = in_thread(lambda: GANTrainer(QueueInput(RingData()), model))
    g0, d0 = values(model.g_vars), values(model.d_vars)
    opt = model.get_optimizer()
    assert "optimizer" in trainer.checkpoint_objects and trainer.checkpoint_objects["optimizer"] is opt
    step = trainer.train_op.step  # recorded and traced in __init__
    traces = dict(step.trace_counts)
    in_thread(lambda: trainer.train_with_defaults(
        callbacks=[ModelSaver(checkpoint_dir=str(tmp_path))], monitors=[], max_epoch=2))
    assert trainer.global_step == 20  # steps_per_epoch: the input's size, known from its callbacks
    assert int(opt.iterations.numpy()) == 40  # one shared optimizer: g_op then d_op each step
    assert changed(g0, values(model.g_vars)) and changed(d0, values(model.d_vars))
    assert trainer.monitors is not None
    # the checkpoint holds the optimizer's state: its slots for every g and d variable
    keys = dict(tf.train.list_variables(str(tmp_path)))
    slots = [k for k in keys if k.startswith("optimizer/_variables/")]
    assert len(slots) == 2 * len(model.g_vars + model.d_vars)
    assert keys["optimizer/_iterations/.ATTRIBUTES/VARIABLE_VALUE"] == []
    reader = tf.train.load_checkpoint(str(tmp_path))
    assert reader.get_tensor("optimizer/_iterations/.ATTRIBUTES/VARIABLE_VALUE") == 40

    # the graph is recorded once: the same step object every run, traced in __init__ and not
    # again in training (read from the step: after training its input is stopped)
    assert trainer.train_op.step is step and isinstance(step, TracedStep)
    assert traces and step.trace_counts == traces


def test_gan_trainer_checkpoint_restores_optimizer_state(tmp_path):
    model = Model()
    trainer = in_thread(lambda: GANTrainer(QueueInput(RingData()), model))
    in_thread(lambda: trainer.train_with_defaults(
        callbacks=[ModelSaver(checkpoint_dir=str(tmp_path))], monitors=[], max_epoch=1))
    saved = values(model.get_optimizer().variables)

    model2 = Model()
    trainer2 = in_thread(lambda: GANTrainer(QueueInput(RingData()), model2))
    opt2 = model2.get_optimizer()
    assert int(opt2.iterations.numpy()) == 0
    SmartInit(str(tmp_path)).init(trainer2)  # what train(session_init=...) does
    assert int(opt2.iterations.numpy()) == 20
    for a, b in zip(saved, values(opt2.variables)):
        np.testing.assert_allclose(a, b)
    for a, b in zip(values(model.g_vars + model.d_vars), values(model2.g_vars + model2.d_vars)):
        np.testing.assert_allclose(a, b)


def test_separate_gan_trainer_periods():
    model = Model()
    trainer = in_thread(lambda: SeparateGANTrainer(QueueInput(RingData(12)), model, d_period=1, g_period=3))
    g0 = values(model.g_vars)
    alone = RunGeneratorAlone(model)
    in_thread(lambda: trainer.train_with_defaults(callbacks=[alone], monitors=[], max_epoch=1))
    # hooked runs count global steps: d runs at every run, g when global_step % 3 == 0
    assert alone.iterations_before == trainer.global_step
    assert changed(g0, values(model.g_vars))
    # d_min and g_min are separate steps: running g_min alone left the discriminator as it was
    assert alone.d_before is not None
    for a, b in zip(alone.d_before, alone.d_after):
        np.testing.assert_array_equal(a, b)


class RunGeneratorAlone(Callback):
    """At the epoch's end, while the input still runs: g_min alone, with the discriminator's
    weights read before and after."""

    def __init__(self, model):
        self.model, self.d_before, self.d_after, self.iterations_before = model, None, None, None

    def _trigger_epoch(self):
        self.iterations_before = int(self.model.get_optimizer().iterations.numpy())
        self.d_before = values(self.model.d_vars)
        self.trainer.run(self.trainer.g_min)
        self.d_after = values(self.model.d_vars)


def test_generator_noise_is_an_optional_predictor_input(tmp_path):
    model = Model()
    trainer = in_thread(lambda: GANTrainer(QueueInput(RingData()), model))
    in_thread(lambda: trainer.train_with_defaults(
        callbacks=[ModelSaver(checkpoint_dir=str(tmp_path))], monitors=[], max_epoch=1))
    z = np.random.default_rng(1).uniform(-1, 1, size=(5, NOISE)).astype(np.float32)
    expected = model.gen(z).numpy()

    online = trainer.get_predictor(['z'], ['gen'])
    np.testing.assert_allclose(online(z)[0], expected, rtol=1e-5, atol=1e-6)

    # tensorpack's ConditionalGAN sampling: PredictConfig(input_names=[..., 'z'])
    pred = OfflinePredictor(PredictConfig(session_init=str(tmp_path), model=Model(),
                                          input_names=['z'], output_names=['gen']))
    out = pred(z)[0]
    assert out.shape == (5, 2)  # the batch of the fed z, not the default's BATCH
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)
    assert not np.allclose(pred(z[::-1].copy())[0], out)

    # without 'z' the tower draws its own noise: the default is used
    default = OfflinePredictor(PredictConfig(session_init=str(tmp_path), model=Model(),
                                             input_names=['real'], output_names=['gen']))
    assert default(np.zeros((3, 2), np.float32))[0].shape == (BATCH, 2)


def test_optional_input_must_be_a_placeholder_with_default(tmp_path):
    model = Model()
    trainer = in_thread(lambda: GANTrainer(QueueInput(RingData()), model))
    with pytest.raises(ValueError, match="placeholder_with_default"):
        trainer.get_predictor(['real', 'z_train'], ['gen'])
    with pytest.raises(KeyError, match="neither an input"):
        trainer.get_predictor(['nope'], ['gen'])
    # the discriminator's loss on real samples needs 'real', which would be zeros: refused, while the
    # generator's loss, computed from z alone (the walk stops at the fed z), is fine
    with pytest.raises(InputSignatureError, match=r"output 'GAN_loss/discrim/loss' is computed from \['real'\]"):
        trainer.get_predictor(['z'], ['GAN_loss/discrim/loss'])
    assert trainer.get_predictor(['z'], ['GAN_loss/gen/loss']).output_names == ['GAN_loss/gen/loss']


def test_building_a_tower_without_telling_the_trainer_its_input_fails_at_once():
    class NoInputTrainer(TowerTrainer):
        def __init__(self, input, model):
            super().__init__()
            input.setup(model.get_input_signature())  # callbacks not registered
            self.tower_func = TowerFunc(model.build_graph, model.inputs())
            with TowerContext('', is_training=True):
                self.tower_func(*input.get_input_tensors())
            self.train_op = minimize(model.get_optimizer(), model.d_loss, var_list=model.d_vars)

    with pytest.raises(GraphBuildError, match="register_callback"):
        in_thread(lambda: NoInputTrainer(QueueInput(RingData()), Model()))


def test_minimize_outside_the_recorded_graph_is_an_error():
    with pytest.raises(GraphBuildError, match="TowerContext"):
        minimize(keras.optimizers.SGD(0.1), tf.constant(1.0), var_list=[tf.Variable(1.0)])


# -- a trainer written for TF2 (TracedStep) with two optimizers: checkpointed without listing them --
class TwoOptimizerGAN(TowerTrainer):
    def __init__(self, input, model):
        super().__init__()
        self.setup_input(model.get_input_signature(), input)
        self.model = model
        self.tower_func = TowerFunc(self._losses, model.get_input_signature())
        self.d_optimizer = keras.optimizers.Adam(1e-2)
        self.g_optimizer = keras.optimizers.SGD(1e-2, momentum=0.9)

        def build(feeds):
            with self.input.tracing(feeds):
                inputs = self.input.get_input_tensors(0)
            with TowerContext("tower0", is_training=True):
                return self.tower_func(*inputs)

        tf.function(build, input_signature=[input.feed_signature()]).get_concrete_function()
        self.d_optimizer.build(model.d_vars)
        self.g_optimizer.build(model.g_vars)
        self.train_op = TracedStep(self._step, input.feed_signature())
        self.train_op.trace()

    def _losses(self, real):
        self.model.build_graph(real)
        return self.model.d_loss, self.model.g_loss

    def _step(self, feeds, fetch_names):
        with self.input.tracing(feeds):
            inputs = self.input.get_input_tensors(0)
        with TowerContext("tower0", is_training=True), tf.GradientTape(persistent=True) as tape:
            d_loss, g_loss = self.tower_func(*inputs)
        for loss, opt, variables in ((d_loss, self.d_optimizer, self.model.d_vars),
                                     (g_loss, self.g_optimizer, self.model.g_vars)):
            opt.apply_gradients(zip(tape.gradient(loss, variables), variables))
        return d_loss, {}


def test_custom_trainer_checkpoint_holds_every_optimizer(tmp_path):
    model = Model()
    trainer = in_thread(lambda: TwoOptimizerGAN(QueueInput(RingData()), model))
    objects = trainer.checkpoint_objects
    assert objects["d_optimizer"] is trainer.d_optimizer and objects["g_optimizer"] is trainer.g_optimizer
    in_thread(lambda: trainer.train_with_defaults(
        callbacks=[ModelSaver(checkpoint_dir=str(tmp_path))], monitors=[], max_epoch=1))
    reader = tf.train.load_checkpoint(str(tmp_path))
    for key in ("d_optimizer", "g_optimizer"):
        assert reader.get_tensor(f"{key}/_iterations/.ATTRIBUTES/VARIABLE_VALUE") == 10
    keys = [k for k, _ in tf.train.list_variables(str(tmp_path))]
    assert sum(k.startswith("d_optimizer/_variables/") for k in keys) == 2 * len(model.d_vars)  # Adam: m, v
    assert sum(k.startswith("g_optimizer/_variables/") for k in keys) == len(model.g_vars)  # momentum
