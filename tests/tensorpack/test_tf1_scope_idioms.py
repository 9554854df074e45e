"""tensorpack's ``@auto_reuse_variable_scope`` and ``@under_variable_scope()`` (issue 23, point 8).

tensorpack's GAN examples decorate the discriminator with ``@auto_reuse_variable_scope`` and call
it on the real and on the fake images under ``variable_scope('discrim')``: the first call creates
its variables, the second reuses them. tensorpack 0.11's rule (tfutils/scope_utils.py): the
decorator opens no scope; the first call under a variable scope (in a graph) inherits the
scope's reuse, later calls under the same scope re-enter it with ``reuse=True``. These tests
check the variables made (names, how many), that both calls compute with the same weights (the
outputs against NumPy), across a second tower and a retrace, and that without the decorator the
second call is TF1's "already exists" error.
"""
from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from trainstack.tensorpack.tf1 import (
    FullyConnected,
    TowerContext,
    TowerFunc,
    auto_reuse_variable_scope,
    under_variable_scope,
)

SPEC = [tf.TensorSpec([None, 3], tf.float32, "real"), tf.TensorSpec([None, 2], tf.float32, "z")]


class GAN:
    """A tensorpack GAN's build_graph: generator under 'gen', the discriminator applied twice."""

    def generator(self, z):
        return FullyConnected("fc", z, 3)

    @auto_reuse_variable_scope
    def discriminator(self, x):
        h = FullyConnected("fc0", x, 4, activation=tf.nn.relu)
        return FullyConnected("fc1", h, 1)

    def build_graph(self, real, z):
        with tf.compat.v1.variable_scope("gen"):
            fake = self.generator(z)
        with tf.compat.v1.variable_scope("discrim"):
            logits_real = self.discriminator(real)
            logits_fake = self.discriminator(fake)
        return fake, logits_real, logits_fake


def trace(body, towers=("tower0",), spec=SPEC):
    """Build ``body`` as the towers of one traced function; returns (tower_func, the function)."""
    tower_func = TowerFunc(body, spec)

    @tf.function
    def step(*inputs):
        outputs = []
        for k, name in enumerate(towers):
            with TowerContext(name, is_training=True, index=k):
                outputs.append(tower_func(*inputs))
        return outputs

    return tower_func, step


def names(tower_func):
    return sorted(v.name.split(":")[0] for v in tower_func.variables)


def numpy_discriminator(variables, x):
    h = np.maximum(x @ variables["discrim/fc0/W"] + variables["discrim/fc0/b"], 0)
    return h @ variables["discrim/fc1/W"] + variables["discrim/fc1/b"]


def test_a_discriminator_applied_to_real_and_fake_creates_its_variables_once_and_shares_them():
    tower_func, step = trace(GAN().build_graph, towers=("tower0", "tower1"))
    rng = np.random.default_rng(0)
    real, z = rng.normal(size=(5, 3)).astype(np.float32), rng.normal(size=(5, 2)).astype(np.float32)
    outputs = step(real, z)
    step(real[:2], z[:2])  # a retrace (another batch size) makes no variable either
    assert names(tower_func) == ["discrim/fc0/W", "discrim/fc0/b", "discrim/fc1/W", "discrim/fc1/b",
                                 "gen/fc/W", "gen/fc/b"]
    values = {v.name.split(":")[0]: v.numpy().astype(np.float64) for v in tower_func.variables}
    fake = z @ values["gen/fc/W"] + values["gen/fc/b"]
    for tower_outputs in outputs:  # both towers, both calls: the same discriminator weights
        got_fake, logits_real, logits_fake = (t.numpy() for t in tower_outputs)
        np.testing.assert_allclose(got_fake, fake, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(logits_real, numpy_discriminator(values, real), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(logits_fake, numpy_discriminator(values, fake), rtol=1e-5, atol=1e-5)


def test_without_the_decorator_the_second_call_is_tf1s_already_exists_error():
    class Undecorated(GAN):
        def discriminator(self, x):
            return FullyConnected("fc1", FullyConnected("fc0", x, 4), 1)

    _, step = trace(Undecorated().build_graph)
    with pytest.raises(ValueError, match="discrim/fc0/W already exists"):
        step(np.zeros((1, 3), np.float32), np.zeros((1, 2), np.float32))


def test_the_rule_is_tensorpacks_reuse_per_variable_scope_no_scope_of_its_own():
    calls = []

    @auto_reuse_variable_scope
    def myfunc(x):  # tensorpack's docstring example
        scope = tf.compat.v1.get_variable_scope()
        calls.append((scope.name, scope.reuse))
        return x * tf.compat.v1.get_variable("w", [3], initializer=tf.compat.v1.ones_initializer())

    def body(x):
        calls.clear()  # tf.function traces again after a trace that created variables: keep the last
        y = myfunc(x) + myfunc(x)  # will inherit parent scope reuse; will reuse
        with tf.compat.v1.variable_scope("newscope"):
            y += myfunc(x) + myfunc(x)
        return y

    tower_func, step = trace(body, spec=[tf.TensorSpec([3], tf.float32, "x")])
    out = step(tf.constant([1.0, 2.0, 3.0]))
    assert names(tower_func) == ["newscope/w", "w"]
    assert calls == [("", False), ("", True), ("newscope", False), ("newscope", True)]
    np.testing.assert_allclose(out[0].numpy(), [4.0, 8.0, 12.0])


def test_under_variable_scope_names_the_scope_after_the_function():
    @under_variable_scope()
    def mid_level(x):
        return FullyConnected("fc", x, 2)

    tower_func, step = trace(lambda real, z: mid_level(real))
    step(np.ones((1, 3), np.float32), np.ones((1, 2), np.float32))
    assert names(tower_func) == ["mid_level/fc/W", "mid_level/fc/b"]
