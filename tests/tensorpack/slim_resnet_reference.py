"""TF-slim's ResNet-50 v1 written independently in plain TensorFlow 2, for the tests of the TF1 room's
``slim.nets.resnet_v1`` and of ``Saliency/saliency-maps.py``: random weights under TF-slim's checkpoint names
(``resnet_v1_50/block1/unit_1/bottleneck_v1/conv1/weights``, ...), the network's logits from those arrays, and
guided backpropagation (``tf.custom_gradient``: the gradient passes where both it and the ReLU's input are
positive)."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
import tensorflow as tf

SCOPE = "resnet_v1_50"
#: (block, units, bottleneck depth) of ResNet-50; the stride 2 is on the last unit of blocks 1-3
BLOCKS = [("block1", 3, 64), ("block2", 4, 128), ("block3", 6, 256), ("block4", 3, 512)]
BN = ("beta", "gamma", "moving_mean", "moving_variance")


def _conv_bn(rng: np.random.Generator, out: dict, name: str, k: int, cin: int, cout: int, gamma: float) -> None:
    out[f"{name}/weights"] = (rng.normal(size=(k, k, cin, cout)) * np.sqrt(2.0 / (k * k * cin))).astype("float32")
    out[f"{name}/BatchNorm/beta"] = rng.normal(0, 0.1, cout).astype("float32")
    out[f"{name}/BatchNorm/gamma"] = rng.uniform(0.5 * gamma, gamma, cout).astype("float32")
    out[f"{name}/BatchNorm/moving_mean"] = rng.normal(0, 0.1, cout).astype("float32")
    out[f"{name}/BatchNorm/moving_variance"] = rng.uniform(0.5, 1.5, cout).astype("float32")


def units() -> list[tuple[str, int, int, int, int]]:
    """Each unit as (its scope, input depth, bottleneck depth, output depth, stride)."""
    found, depth_in = [], 64
    for block, count, base in BLOCKS:
        for i in range(count):
            stride = 2 if i == count - 1 and block != "block4" else 1
            found.append((f"{SCOPE}/{block}/unit_{i + 1}/bottleneck_v1", depth_in, base, 4 * base, stride))
            depth_in = 4 * base
    return found


def random_weights(seed: int = 0, num_classes: int = 1000) -> dict[str, np.ndarray]:
    """Every variable of slim's ``resnet_v1_50(x, num_classes)`` by its TF1 name, random, scaled so that
    activations stay of order one through the 16 units."""
    rng = np.random.default_rng(seed)
    out: dict[str, np.ndarray] = {}
    _conv_bn(rng, out, f"{SCOPE}/conv1", 7, 3, 64, 1.0)
    for unit, cin, base, cout, _ in units():
        if cin != cout:
            _conv_bn(rng, out, f"{unit}/shortcut", 1, cin, cout, 1.0)
        _conv_bn(rng, out, f"{unit}/conv1", 1, cin, base, 1.0)
        _conv_bn(rng, out, f"{unit}/conv2", 3, base, base, 1.0)
        _conv_bn(rng, out, f"{unit}/conv3", 1, base, cout, 0.3)
    out[f"{SCOPE}/logits/weights"] = (rng.normal(size=(1, 1, 2048, num_classes)) / np.sqrt(2048)).astype("float32")
    out[f"{SCOPE}/logits/biases"] = rng.normal(0, 0.1, num_classes).astype("float32")
    return out


def guided_relu(x: tf.Tensor) -> tf.Tensor:
    """ReLU whose gradient is guided backpropagation's: ``dy`` where ``dy > 0`` and ``x > 0``, else 0."""

    @tf.custom_gradient
    def relu(x):
        def grad(dy):
            return tf.where((dy > 0) & (x > 0), dy, tf.zeros_like(dy))
        return tf.nn.relu(x), grad

    return relu(x)


def logits(p: dict[str, np.ndarray], images: tf.Tensor, relu: Callable = tf.nn.relu,
           epsilon: float = 1.001e-5) -> tf.Tensor:
    """slim's ResNet-50 v1 in inference mode from the arrays ``p``: ``[batch, 1, 1, classes]`` (contrib's
    logits are not squeezed). ``epsilon``: TF1's fused batch norm raised 1e-5 to 1.001e-5."""

    def conv(x, name, stride, act=True, bn=True):
        w = p[f"{name}/weights"]
        k = w.shape[0]
        if stride > 1 and k > 1:   # conv2d_same: explicit padding, then VALID
            begin = (k - 1) // 2
            x = tf.pad(x, [[0, 0], [begin, k - 1 - begin], [begin, k - 1 - begin], [0, 0]])
            y = tf.nn.conv2d(x, w, stride, "VALID")
        else:
            y = tf.nn.conv2d(x[:, ::stride, ::stride] if stride > 1 else x, w, 1, "SAME")
        if bn:
            b = {v: p[f"{name}/BatchNorm/{v}"] for v in BN}
            y = (y - b["moving_mean"]) / np.sqrt(b["moving_variance"] + epsilon) * b["gamma"] + b["beta"]
        else:
            y = y + p[f"{name}/biases"]
        return relu(y) if act else y

    net = conv(images, f"{SCOPE}/conv1", 2)
    net = tf.nn.max_pool2d(net, 3, 2, "SAME")
    for unit, cin, _, cout, stride in units():
        shortcut = conv(net, f"{unit}/shortcut", stride, act=False) if cin != cout else net[:, ::stride, ::stride]
        residual = conv(net, f"{unit}/conv1", 1)
        residual = conv(residual, f"{unit}/conv2", stride)
        residual = conv(residual, f"{unit}/conv3", 1, act=False)
        net = relu(shortcut + residual)
    net = tf.reduce_mean(net, [1, 2], keepdims=True)
    return conv(net, f"{SCOPE}/logits", 1, act=False, bn=False)


def guided_saliency(p: dict[str, np.ndarray], mean_rgb: np.ndarray, image: np.ndarray,
                    relu: Callable = guided_relu) -> np.ndarray:
    """saliency-maps.py's saliency computed independently: the gradient of ``reduce_max(logits, 1)`` with
    respect to the ``[224, 224, 3]`` image, through guided ReLUs (``relu=tf.nn.relu``: the plain gradient)."""
    x = tf.constant(image)
    with tf.GradientTape() as tape:
        tape.watch(x)
        out = tf.reduce_max(logits(p, tf.expand_dims(x - mean_rgb, 0), relu=relu), 1)
    return tape.gradient(out, x).numpy()
