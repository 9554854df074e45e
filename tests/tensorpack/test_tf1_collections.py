"""TF1 variable collections in a tower and in a tensorpack-style trainer's ``__init__`` (issue 23, 6).

tensorpack's GAN and fine-tuning scripts select variables with
``tf.compat.v1.get_collection(TRAINABLE_VARIABLES, scope='gen')`` and
``tf.compat.v1.trainable_variables()``. While a tower is traced, and in a custom
trainer's ``__init__`` once it built a tower, they answer with the model's
variables whose names match (``re.match``), as TF1's collections did;
``UPDATE_OPS`` is empty. Anywhere else they are TensorFlow's own.
"""
from __future__ import annotations

import threading

import keras
import numpy as np
import tensorflow as tf

from trainstack.tensorpack.input_source import FeedInput
from trainstack.tensorpack.tf1 import TowerContext, TowerFunc, TowerTrainer

GK = tf.compat.v1.GraphKeys
BATCH = 8
NOISE = 3


def ids(variables):
    return [id(v) for v in variables]


def behind(*layers, trainable=True, where=lambda path: True):
    """ids of the tf.Variables behind the layers' (trainable) Keras weights whose path passes ``where``."""
    return [id(w.value) for layer in layers
            for w in (layer.trainable_weights if trainable else layer.weights) if where(w.path)]


class GANModel:
    """A port of tensorpack's GAN model: collect_variables() selects the variables by scope."""

    def __init__(self):
        self.gen = keras.Sequential([keras.layers.Dense(4, activation="relu"), keras.layers.Dense(2)],
                                    name="gen")
        self.discrim = keras.Sequential([keras.layers.Dense(4), keras.layers.BatchNormalization(),
                                         keras.layers.Dense(1)], name="discrim")
        self.seen: dict = {}  # what the collections answered in the last build of the tower

    def inputs(self):
        return [tf.TensorSpec((None, 2), tf.float32, "real")]

    def get_input_signature(self):
        return self.inputs()

    def build_graph(self, real):
        z = tf.random.uniform([BATCH, NOISE], -1, 1)
        fake = self.gen(z)
        logits_real = self.discrim(real, training=True)
        logits_fake = self.discrim(fake, training=True)
        xent = tf.nn.sigmoid_cross_entropy_with_logits
        self.d_loss = tf.reduce_mean(xent(logits=logits_real, labels=tf.ones_like(logits_real))
                                     + xent(logits=logits_fake, labels=tf.zeros_like(logits_fake)))
        self.g_loss = tf.reduce_mean(xent(logits=logits_fake, labels=tf.ones_like(logits_fake)))
        self.collect_variables()

    def collect_variables(self, g_scope="gen", d_scope="discrim"):
        # tensorpack's GANModelDesc.collect_variables, unchanged
        self.g_vars = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.TRAINABLE_VARIABLES, g_scope)
        assert self.g_vars
        self.d_vars = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.TRAINABLE_VARIABLES, d_scope)
        assert self.d_vars
        self.seen = {"trainable": tf.compat.v1.trainable_variables(),
                     "global": tf.compat.v1.global_variables(),
                     "model": tf.compat.v1.model_variables(),
                     "update_ops": tf.compat.v1.get_collection(GK.UPDATE_OPS)}


class SeparateGANTrainer(TowerTrainer):
    """tensorpack's SeparateGANTrainer form, selecting the variables in ``__init__`` by scope;
    each step runs the optimizations named in ``phases`` (``"d"``, ``"g"``)."""

    def __init__(self, input, model, phases=("d", "g")):
        super().__init__()
        self.phases = phases
        self.before_tower = tf.compat.v1.trainable_variables()
        self.register_callback(input.setup(model.get_input_signature()))
        self.tower_func = TowerFunc(model.build_graph, model.inputs())
        with TowerContext("", is_training=True):
            self.tower_func(*input.get_input_tensors())
        self.g_vars = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.TRAINABLE_VARIABLES, scope="gen")
        self.d_vars = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.TRAINABLE_VARIABLES, scope="discrim")
        self.kernels = tf.compat.v1.get_collection(GK.GLOBAL_VARIABLES, scope=".*kernel")
        self.search_is_not_match = tf.compat.v1.get_collection(GK.GLOBAL_VARIABLES, scope="dense")
        self.update_ops = tf.compat.v1.get_collection(GK.UPDATE_OPS)
        opt = keras.optimizers.SGD(0.1)
        self.d_min = opt.minimize(model.d_loss, var_list=self.d_vars, name="d_min")
        self.g_min = opt.minimize(model.g_loss, var_list=self.g_vars, name="g_min")

    def run_step(self):
        for phase in self.phases:
            self.hooked_run(self.d_min if phase == "d" else self.g_min)


def batches(n=4, seed=0):
    rng = np.random.default_rng(seed)
    return [[(rng.normal(size=(BATCH, 2)) * 0.1 + [1.0, -1.0]).astype(np.float32)] for _ in range(n)]


def values(variables):
    return [np.array(v.numpy()) for v in variables]


def same(before, variables):
    return all(np.array_equal(b, a) for b, a in zip(before, values(variables)))


def moved(before, variables):
    # any: a batch-normalized discriminator gives the generator's last bias no gradient
    return any(not np.allclose(b, a) for b, a in zip(before, values(variables)))


def test_a_gan_trainer_selects_its_variables_by_scope_and_trains_each_side():
    model = GANModel()
    trainer = SeparateGANTrainer(FeedInput(batches()), model, phases=("d",))
    gen, discrim = model.gen, model.discrim
    # in __init__, after the tower: the model's trainable variables whose names match the scope
    assert trainer.before_tower == []  # before any tower: TensorFlow's own (empty)
    assert ids(trainer.g_vars) == behind(gen) and ids(trainer.d_vars) == behind(discrim)
    assert all(isinstance(v, tf.Variable) for v in trainer.g_vars)  # as TF1's collections held
    assert ids(trainer.kernels) == behind(gen, discrim, where=lambda path: path.endswith("/kernel"))
    assert trainer.search_is_not_match == []  # re.match, as TF1: 'dense' is not a prefix of any name
    assert trainer.update_ops == []

    # inside build_graph: the same answers, and the whole model for the unscoped listings
    assert ids(model.g_vars) == behind(gen) and ids(model.d_vars) == behind(discrim)
    assert ids(model.seen["trainable"]) == behind(gen, discrim)
    every = behind(gen, discrim, trainable=False)
    assert sorted(ids(model.seen["global"])) == sorted(every) and len(every) > len(behind(gen, discrim))
    assert ids(model.seen["model"]) == ids(model.seen["global"])
    assert model.seen["update_ops"] == []

    # the d step alone moves the discriminator only
    g0, d0 = values(trainer.g_vars), values(trainer.d_vars)
    trainer.train_with_defaults(callbacks=[], monitors=[], max_epoch=1)
    assert same(g0, trainer.g_vars) and moved(d0, trainer.d_vars)


def test_a_gan_trainer_with_both_steps_moves_both_sides():
    model = GANModel()
    trainer = SeparateGANTrainer(FeedInput(batches()), model, phases=("d", "g"))
    g0, d0 = values(trainer.g_vars), values(trainer.d_vars)
    trainer.train_with_defaults(callbacks=[], monitors=[], max_epoch=1)
    assert moved(g0, trainer.g_vars) and moved(d0, trainer.d_vars)
    assert int(trainer.d_min.optimizer.iterations.numpy()) == 2 * len(batches())  # one shared SGD


def test_a_trainer_that_traced_its_own_tower_in_init_gets_its_variables():
    class TracedInit(TowerTrainer):
        def __init__(self, model):
            super().__init__()
            self.tower_func = TowerFunc(model.build_graph, model.inputs())

            def build(real):
                with TowerContext("tower0", is_training=True):
                    self.tower_func(real)

            tf.function(build).get_concrete_function(tf.TensorSpec((None, 2), tf.float32))
            self.g_vars = tf.compat.v1.trainable_variables(scope="gen")

    model = GANModel()
    trainer = TracedInit(model)
    assert ids(trainer.g_vars) == behind(model.gen)


def test_outside_any_tower_the_collections_are_tensorflows_own():
    originals = (tf.compat.v1.get_collection, tf.compat.v1.trainable_variables, tf.compat.v1.global_variables)
    model = GANModel()
    trainer = SeparateGANTrainer(FeedInput(batches(1)), model)
    trainer.train_with_defaults(callbacks=[], monitors=[], max_epoch=1)
    assert (tf.compat.v1.get_collection, tf.compat.v1.trainable_variables,
            tf.compat.v1.global_variables) == originals
    assert model.gen.trainable_weights  # the model exists and is built; TensorFlow 2's lists are empty
    assert tf.compat.v1.trainable_variables() == []
    assert tf.compat.v1.global_variables(scope="gen") == []
    assert tf.compat.v1.get_collection(GK.TRAINABLE_VARIABLES, scope="gen") == []


def test_another_thread_sees_tensorflows_own_collections_while_a_tower_is_traced():
    model = GANModel()
    inside, release = threading.Event(), threading.Event()
    seen_inside: list = []

    def build(real):
        model.build_graph(real)
        seen_inside.append(tf.compat.v1.trainable_variables())
        inside.set()
        assert release.wait(60)

    tower_func = TowerFunc(build, model.inputs())

    def trace():
        def traced(real):
            with TowerContext("tower0", is_training=True):
                tower_func(real)
        tf.function(traced).get_concrete_function(tf.TensorSpec((None, 2), tf.float32))

    thread = threading.Thread(target=trace, daemon=True)
    thread.start()
    try:
        assert inside.wait(60)
        assert tf.compat.v1.trainable_variables() == []
        assert tf.compat.v1.get_collection(GK.GLOBAL_VARIABLES, scope="gen") == []
    finally:
        release.set()
        thread.join(60)
    assert not thread.is_alive()
    assert ids(seen_inside[0]) == behind(model.gen, model.discrim)


def test_scope_is_a_regex_matched_from_the_start_of_the_name():
    model = GANModel()
    found = {}

    second = f"gen/{model.gen.layers[1].name}/"  # Keras's path; the graph may name it gen/dense_1_1/
    scopes = ("gen/", second, "discrim/.*/(gamma|beta)$", "kernel")

    def build(real):
        model.build_graph(real)
        for scope in scopes:
            found[scope] = ids(tf.compat.v1.get_collection(GK.TRAINABLE_VARIABLES, scope=scope))

    tower_func = TowerFunc(build, model.inputs())

    def traced(real):
        with TowerContext("tower0", is_training=True):
            tower_func(real)

    tf.function(traced).get_concrete_function(tf.TensorSpec((None, 2), tf.float32))
    assert found["gen/"] == behind(model.gen)
    assert found[second] == behind(model.gen.layers[1]) and len(found[second]) == 2
    assert found["discrim/.*/(gamma|beta)$"] == behind(model.discrim.layers[1])  # the BN's gamma, beta
    assert found["kernel"] == []  # re.match: no name starts with 'kernel'
