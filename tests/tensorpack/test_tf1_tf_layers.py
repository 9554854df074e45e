"""TF1's functional ``tf.layers`` as ``tfv1.layers`` (tensorpack's mnist-tflayers.py writes its model in them):
each layer against the Keras layer of the same weights, TF1's defaults and variable names, argscope over them
after ``enable_argscope_for_module(tf.layers)``, and the errors that name what to use instead."""
from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from trainstack.tensorpack.tf1 import (
    TF1CallError,
    TowerContext,
    TowerFunc,
    argscope,
    enable_argscope_for_module,
    tfv1,
)

RNG = np.random.default_rng(0)
TOL = dict(rtol=1e-5, atol=1e-5)
layers = tfv1.layers


class Tower:
    """``body(x)`` as a tower function, built and run as tower ``tower<index>`` or the inference tower."""

    def __init__(self, body, shape):
        self.func = TowerFunc(body, [tf.TensorSpec(shape, tf.float32, "x")])
        self._fn = tf.function(self._build)

    def _build(self, x, training, index):
        with TowerContext(f"tower{index}" if training else "", is_training=training, index=index):
            return self.func(x)

    def run(self, x, training=True, index=0):
        out = self._fn(tf.constant(x, tf.float32), training=training, index=index)
        return tf.nest.map_structure(lambda t: t.numpy(), out)

    @property
    def variables(self) -> dict:
        return {v.name.split(":")[0]: v for v in self.func.variables}


def keras_output(layer, x, *weights):
    layer.build(x.shape)
    layer.set_weights(list(weights))
    return keras.ops.convert_to_numpy(layer(x))


def test_tf1_layers_compute_what_the_keras_layers_of_their_weights_compute_under_tf1s_names():
    x = RNG.normal(size=(2, 6, 6, 3)).astype("float32")

    def body(x):
        valid = layers.conv2d(x, 4, 3)                                   # TF1's default: 'valid', no activation
        same = layers.conv2d(x, 4, 3, strides=2, padding="same", activation=tf.nn.relu)
        up = layers.conv2d_transpose(x, 2, 3, strides=2, name="up")      # 'valid': 6 * 2 + 1
        pooled = layers.max_pooling2d(x, 2, 2)
        averaged = layers.average_pooling2d(x, 3, 2, padding="same")
        flat = layers.flatten(x)
        fc = layers.dense(flat, 5, activation=tf.nn.sigmoid, name="fc")
        per_pixel = layers.dense(x, 2, use_bias=False)                   # rank 4: over the last axis
        return valid, same, up, pooled, averaged, flat, fc, per_pixel

    tower = Tower(body, [None, 6, 6, 3])
    tower.run(x)
    assert sorted(tower.variables) == ["conv2d/bias", "conv2d/kernel", "conv2d_1/bias", "conv2d_1/kernel",
                                       "dense/kernel", "fc/bias", "fc/kernel", "up/bias", "up/kernel"]
    weights = {name: RNG.normal(size=v.shape).astype("float32") for name, v in tower.variables.items()}
    for name, value in weights.items():
        tower.variables[name].assign(value)
    valid, same, up, pooled, averaged, flat, fc, per_pixel = tower.run(x)
    w = weights
    np.testing.assert_allclose(valid, keras_output(keras.layers.Conv2D(4, 3), x, w["conv2d/kernel"],
                                                   w["conv2d/bias"]), **TOL)
    np.testing.assert_allclose(same, keras_output(keras.layers.Conv2D(4, 3, strides=2, padding="same",
                                                                      activation="relu"),
                                                  x, w["conv2d_1/kernel"], w["conv2d_1/bias"]), **TOL)
    assert up.shape == (2, 13, 13, 2)
    np.testing.assert_allclose(up, keras_output(keras.layers.Conv2DTranspose(2, 3, strides=2), x,
                                                w["up/kernel"], w["up/bias"]), **TOL)
    np.testing.assert_allclose(pooled, keras_output(keras.layers.MaxPooling2D(2, 2), x), **TOL)
    np.testing.assert_allclose(averaged, keras_output(keras.layers.AveragePooling2D(3, 2, padding="same"), x),
                               **TOL)
    np.testing.assert_allclose(flat, x.reshape(2, -1))
    np.testing.assert_allclose(fc, 1 / (1 + np.exp(-(flat @ w["fc/kernel"] + w["fc/bias"]))), **TOL)
    np.testing.assert_allclose(per_pixel, x @ w["dense/kernel"], **TOL)
    # later towers and the inference tower name their layers the same way, and reuse the variables
    np.testing.assert_allclose(tower.run(x, index=1)[0], valid, **TOL)
    np.testing.assert_allclose(tower.run(x, training=False)[6], fc, **TOL)
    assert len(tower.variables) == 9


def test_tf1_layers_defaults_are_tf1s_glorot_kernels_zero_biases_and_no_dropout_unless_training():
    x = np.ones((4, 8, 8, 1), "float32")

    def body(x):
        flat = layers.flatten(x)
        return (layers.dense(flat, 3), layers.dropout(flat, rate=0.5),
                layers.dropout(flat, rate=0.5, training=True), layers.dropout(flat, training=tf.constant(False)))

    tower = Tower(body, [None, 8, 8, 1])
    _, default, dropped, constant_false = tower.run(x)
    kernel, bias = tower.variables["dense/kernel"].numpy(), tower.variables["dense/bias"].numpy()
    limit = np.sqrt(6 / (64 + 3))
    assert np.all(np.abs(kernel) <= limit) and kernel.std() > limit / 3 and np.all(bias == 0)
    np.testing.assert_array_equal(default, x.reshape(4, -1))           # TF1's training=False
    np.testing.assert_array_equal(constant_false, x.reshape(4, -1))
    assert set(np.unique(dropped)) == {0.0, 2.0}                       # kept values scaled by 1 / (1 - rate)


def test_argscope_over_tf_layers_after_enable_argscope_for_module():
    enable_argscope_for_module(layers)   # as mnist-tflayers.py: enable_argscope_for_module(tf.layers)
    enable_argscope_for_module(layers)   # a second call wraps nothing again
    assert not getattr(layers.conv2d.__wrapped__, "__argscope_enabled__", False)

    def body(x):
        with argscope([layers.conv2d], padding="same", activation=tf.nn.relu):
            scoped = layers.conv2d(x, 2, 3, name="conv0")
            explicit = layers.conv2d(x, 2, 3, padding="valid", name="conv1")
        return scoped, explicit, layers.conv2d(x, 2, 3, name="conv2")

    scoped, explicit, outside = Tower(body, [None, 5, 5, 1]).run(RNG.normal(size=(1, 5, 5, 1)))
    assert scoped.shape == (1, 5, 5, 2) and scoped.min() >= 0
    assert explicit.shape == (1, 3, 3, 2) and outside.shape == (1, 3, 3, 2) and outside.min() < 0


def test_what_tf_layers_cannot_do_is_an_error_naming_the_replacement():
    with pytest.raises(TF1CallError, match=r"tf\.layers\.batch_normalization: .*BatchNorm\('bn', x\)"):
        layers.batch_normalization
    with pytest.raises(TF1CallError, match=r"tf\.layers\.Conv2D: .*keras\.layers\.Conv2D made once in ModelDesc"):
        layers.Conv2D
    with pytest.raises(AttributeError):
        layers.no_such_layer
    with pytest.raises(TF1CallError, match=r"conv2d\(kernel_regularizer=\.\.\.\).*regularize_cost\('<name>/kernel'"):
        Tower(lambda x: layers.conv2d(x, 2, 3, kernel_regularizer=lambda w: w), [None, 4, 4, 1]).run(
            np.ones((1, 4, 4, 1)))
    with pytest.raises(RuntimeError, match=r"tf\.layers\.dense\(\) must be called inside the tower function"):
        layers.dense(tf.ones([1, 2]), 3)
    with pytest.raises(TypeError, match=r"enable_argscope_for_module\(tensorflow\.compat\.v1\.layers\).*tfv1\.layers"):
        enable_argscope_for_module(tf.compat.v1.layers)


def test_tfv1_is_tf_compat_v1_read_at_each_access_with_tf1s_layers():
    assert tfv1.TensorSpec is tf.TensorSpec
    # tfv1.train: tf.compat.v1.train's names, read at each access, but TF1's range_input_producer
    assert tfv1.train.AdamOptimizer is tf.compat.v1.train.AdamOptimizer and "Saver" in dir(tfv1.train)
    assert tfv1.train.range_input_producer is not tf.compat.v1.train.range_input_producer
    assert tfv1.get_variable is tf.compat.v1.get_variable      # TensorFlow's own outside a tower
    assert "layers" in dir(tfv1) and "placeholder_with_default" in dir(tfv1)

    def body(x):
        # in a tower, the room's get_variable: the variable is the tower function's, by its TF1 name
        with tfv1.variable_scope("scale"):
            return x * tfv1.get_variable("w", [], initializer=tfv1.constant_initializer(3.0))

    tower = Tower(body, [None])
    np.testing.assert_allclose(tower.run(np.ones(2)), [3.0, 3.0])
    assert list(tower.variables) == ["scale/w"]
