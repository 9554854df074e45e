"""tf.compat.v1.get_variable under variable_scopes in a tower, as tensorpack's tutorial teaches (issue 24).

The same model written with get_variable and with Keras layers, from the same initial weights,
trains to the same weights single-tower and 2-tower; the checkpoint holds the TF1 names; TF1's
reuse rules hold within a build.
"""
from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf
import tf1_variable_cases as cases  # by name: the multi-device worker imports it (see multigpu_cases.py)

from trainstack.tensorpack.tf1 import TF1CallError, TowerContext, TowerFunc


def test_a_get_variable_model_trains_as_the_same_model_in_keras_layers(tmp_path):
    tf1_weights, names = cases.train(cases.TF1Model(), logdir=str(tmp_path))
    keras_weights, _ = cases.train(cases.KerasModel())
    assert names == ["fc0/W:0", "fc0/b:0", "fc1/W:0", "fc1/b:0"]
    assert not np.allclose(tf1_weights[0], cases.W0)  # it trained
    for a, b in zip(tf1_weights, keras_weights):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    keys = [k for k, _ in tf.train.list_variables(str(tmp_path))]
    for name in ("fc0/W", "fc0/b", "fc1/W", "fc1/b"):  # the TF1 names, in the checkpoint's keys
        assert any(name.replace("/", ".S") in k or name in k for k in keys), (name, keys)


def test_two_towers_share_the_variables_and_train_as_keras(cpus):
    tf1_weights, keras_weights, names = cpus.run(cases.two_towers_case)
    assert [n.split(":")[0] for n in names] == ["fc0/W", "fc0/b", "fc1/W", "fc1/b"]
    for a, b in zip(tf1_weights, keras_weights):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def build_once(body):
    tower_func = TowerFunc(body, [tf.TensorSpec([None], tf.float32, "x")])

    def traced(x):
        with TowerContext("tower0", is_training=True):
            return tower_func(x)

    tf.function(traced).get_concrete_function(tf.TensorSpec([None], tf.float32))
    return tower_func


def test_tf1_reuse_rules_hold_within_a_build():
    def twice(x):
        tf.compat.v1.get_variable("v", [1])
        tf.compat.v1.get_variable("v", [1])
        return tf.reduce_sum(x)

    with pytest.raises(ValueError, match="Variable v already exists, disallowed"):
        build_once(twice)

    def auto(x):
        with tf.compat.v1.variable_scope("s", reuse=tf.compat.v1.AUTO_REUSE):
            a = tf.compat.v1.get_variable("v", [2])
            b = tf.compat.v1.get_variable("v", [2])
        assert a is b
        return tf.reduce_sum(x) + tf.reduce_sum(a)

    tower_func = build_once(auto)
    assert [v.name for v in tower_func.variables] == ["s/v:0"]

    def missing(x):
        with tf.compat.v1.variable_scope("s", reuse=True):
            tf.compat.v1.get_variable("nope", [1])
        return tf.reduce_sum(x)

    with pytest.raises(ValueError, match="Variable s/nope does not exist"):
        build_once(missing)


def test_unsupported_get_variable_arguments_name_their_replacement():
    def regularized(x):
        tf.compat.v1.get_variable("w", [2], regularizer=lambda v: tf.reduce_sum(v))
        return tf.reduce_sum(x)

    with pytest.raises(TF1CallError, match="regularizer=.*regularize_cost"):
        build_once(regularized)


def test_tf1_arguments_a_tower_cannot_honour_are_refused_not_ignored():
    def in_model_collections(x):
        v = tf.compat.v1.get_variable("v", [2], collections=[tf.compat.v1.GraphKeys.GLOBAL_VARIABLES],
                                      use_resource=True)
        return tf.reduce_sum(x) + tf.reduce_sum(v)

    assert [v.name for v in build_once(in_model_collections).variables] == ["v:0"]

    def own_collection(x):
        tf.compat.v1.get_variable("w", [2], collections=["my_vars"])
        return tf.reduce_sum(x)

    with pytest.raises(TF1CallError, match=r"collections=\['my_vars'\].*\['my_vars'\] would be ignored"):
        build_once(own_collection)

    def unshaped(x):
        tf.compat.v1.get_variable("u", [2], validate_shape=False)
        return tf.reduce_sum(x)

    with pytest.raises(TF1CallError, match="validate_shape=False"):
        build_once(unshaped)
