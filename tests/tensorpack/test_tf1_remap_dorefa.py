"""``remap_variables`` as DoReFa-Net uses it (issue 24): its function reads ``v.op.name`` / ``v.name`` as in TF1
and quantizes the weights of the middle layers only; the outputs are checked against NumPy."""
from __future__ import annotations

import numpy as np
import tensorflow as tf

from trainstack.tensorpack.tf1 import (
    Conv2D,
    FullyConnected,
    TowerContext,
    TowerFunc,
    argscope,
    remap_variables,
)

RNG = np.random.default_rng(7)
BIT_W = 2


def get_dorefa_fw(bit_w: int):
    """DoReFa-Net's weight quantizer ``fw`` (dorefa.py), as a script has it."""
    def quantize(x, k):
        n = float(2 ** k - 1)

        @tf.custom_gradient
        def _quantize(x):
            return tf.round(x * n) / n, lambda dy: dy

        return _quantize(x)

    def fw(x):
        x = tf.tanh(x)
        x = x / tf.reduce_max(tf.abs(x)) * 0.5 + 0.5
        return 2 * quantize(x, bit_w) - 1

    return fw


def fw_np(w: np.ndarray, bit_w: int = BIT_W) -> np.ndarray:
    n = 2 ** bit_w - 1
    x = np.tanh(w)
    x = x / np.abs(x).max() * 0.5 + 0.5
    return 2 * np.round(x * n) / n - 1


def test_a_dorefa_binarize_weight_reads_tf1_names_and_quantizes_only_the_middle_layers():
    fw = get_dorefa_fw(BIT_W)
    seen: list[tuple[str, str]] = []

    def binarize_weight(v):  # DoReFa-Net's, as written in its scripts
        name = v.op.name
        seen.append((name, v.name))
        if not name.endswith('W') or 'conv0' in name or 'fct' in name:
            return v
        return fw(v)

    def body(image):
        with remap_variables(binarize_weight), argscope(Conv2D, kernel_size=1, activation=tf.nn.relu):
            x = Conv2D('conv0', image, 4)
            x = Conv2D('conv1', x, 4)
            x = FullyConnected('fc0', x, 5, activation=tf.nn.relu)
            return FullyConnected('fct', x, 3)

    func = TowerFunc(body, [tf.TensorSpec([None, 2, 2, 3], tf.float32, "image")])

    @tf.function
    def run(x, training, index):
        with TowerContext(f"tower{index}" if training else "", is_training=training, index=index):
            return func(x)

    x = RNG.normal(size=(4, 2, 2, 3)).astype("float32")
    run(tf.constant(x), training=True, index=0)
    variables = {v.name.split(":")[0]: v for v in func.variables}
    assert sorted(variables) == sorted(f"{layer}/{p}" for layer in ("conv0", "conv1", "fc0", "fct") for p in "Wb")
    weights = {}
    for name, v in variables.items():
        weights[name] = RNG.normal(size=v.shape).astype("float32")
        v.assign(weights[name])

    def forward(quantized: set[str]) -> np.ndarray:
        w = {n: (fw_np(a) if n in quantized else a) for n, a in weights.items()}
        relu = lambda a: np.maximum(a, 0)  # noqa: E731
        h = relu(x @ w["conv0/W"][0, 0] + w["conv0/b"])
        h = relu(h @ w["conv1/W"][0, 0] + w["conv1/b"])
        h = relu(h.reshape(len(x), -1) @ w["fc0/W"] + w["fc0/b"])
        return h @ w["fct/W"] + w["fct/b"]

    expected = forward({"conv1/W", "fc0/W"})
    assert not np.allclose(expected, forward(set()), atol=1e-3)  # the quantization changes the outputs
    seen.clear()
    for training, index in ((True, 0), (True, 1), (False, 0)):  # every tower and the predictor's
        np.testing.assert_allclose(run(tf.constant(x), training=training, index=index).numpy(), expected,
                                   rtol=1e-5, atol=1e-5)
    # TF1's names, in the towers traced since (tower1, the inference tower): the variable's op name and its
    # value's name
    names = [(f"{layer}/{p}", f"{layer}/{p}:0") for layer in ("conv0", "conv1", "fc0", "fct") for p in "Wb"]
    assert seen == names * 2
    # the variables themselves are not changed: the layers used fw(W)
    for name, v in variables.items():
        np.testing.assert_array_equal(v.numpy(), weights[name])


def test_the_remapped_weights_are_trained_through_the_straight_through_estimator():
    fw = get_dorefa_fw(BIT_W)

    def body(x):
        with remap_variables(lambda v: fw(v) if v.op.name.endswith("W") else v):
            return tf.reduce_sum(FullyConnected("fc", x, 2))

    func = TowerFunc(body, [tf.TensorSpec([None, 3], tf.float32, "x")])

    @tf.function
    def gradients(x):
        with tf.GradientTape() as tape:
            with TowerContext("tower0", is_training=True):
                loss = func(x)
        return tape.gradient(loss, func.variables)

    x = RNG.normal(size=(2, 3)).astype("float32")
    grads = gradients(tf.constant(x))
    w = func.variables[0].numpy()
    # d loss / d fw(W) = sum of x over the batch per input, times d fw / d W (tanh, max-normalized; round: identity)
    t = tf.constant(w)
    with tf.GradientTape() as tape:
        tape.watch(t)
        q = tf.tanh(t) / tf.reduce_max(tf.abs(tf.tanh(t))) * 0.5 + 0.5
        y = tf.reduce_sum((2 * q - 1) * np.repeat(x.sum(0)[:, None], 2, axis=1))
    np.testing.assert_allclose(grads[0].numpy(), tape.gradient(y, t).numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(grads[1].numpy(), [2.0, 2.0])
