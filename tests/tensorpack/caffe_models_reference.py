"""tensorpack's ``examples/CaffeModels`` networks written in plain TensorFlow 2 and NumPy, from the arrays of a
``.npz`` in caffe's names (``conv1/W``, ``conv1/b``, ... as ``tensorpack.utils.loadcaffe`` writes them).

These are the references the ported ``load-alexnet.py``, ``load-vgg16.py``/``load-vgg19.py`` and ``load-cpm.py``
must follow (``test_caffe_models_examples.py``): each function returns the features before the last layer, so
that a test can rescale that layer's weights and compute the outputs without a second forward pass. Also the
random weights under those names and shapes (He-scaled kernels, small biases: finite activations).
"""
from __future__ import annotations

import numpy as np
import tensorflow as tf

#: the convolutions per VGG group: load-vgg16.py, load-vgg19.py
VGG_GROUPS = {16: [2, 2, 3, 3, 3], 19: [2, 2, 4, 4, 4]}


def random_weights(shapes: dict[str, tuple[int, ...]], seed: int = 0) -> dict[str, np.ndarray]:
    """``name/W`` of each shape (He-scaled) and ``name/b`` (its last dimension, 0.1 x normal), float32."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, shape in shapes.items():
        out[f"{name}/W"] = rng.standard_normal(shape, dtype=np.float32) * np.float32(np.sqrt(2 / np.prod(shape[:-1])))
        out[f"{name}/b"] = rng.standard_normal(shape[-1], dtype=np.float32) * np.float32(0.1)
    return out


def alexnet_shapes() -> dict[str, tuple[int, ...]]:
    """caffe's bvlc_alexnet, grouped convolutions (conv2, conv4, conv5) taking half of the channels each."""
    return {"conv1": (11, 11, 3, 96), "conv2": (5, 5, 48, 256), "conv3": (3, 3, 256, 384),
            "conv4": (3, 3, 192, 384), "conv5": (3, 3, 192, 256), "fc6": (9216, 4096), "fc7": (4096, 4096),
            "fc8": (4096, 1000)}


def vgg_shapes(depth: int) -> dict[str, tuple[int, ...]]:
    shapes: dict[str, tuple[int, ...]] = {}
    cin = 3
    for group, (count, ch) in enumerate(zip(VGG_GROUPS[depth], [64, 128, 256, 512, 512]), 1):
        for i in range(1, count + 1):
            shapes[f"conv{group}_{i}"], cin = (3, 3, cin, ch), ch
    shapes.update(fc6=(7 * 7 * 512, 4096), fc7=(4096, 4096), fc8=(4096, 1000))
    return shapes


def cpm_shapes() -> dict[str, tuple[int, ...]]:
    """CPM's MPI model: a VGG trunk to 46x46x128, then stage 1 and five refining stages of 15 maps."""
    trunk = [("conv1_1", 3, 64), ("conv1_2", 64, 64), ("conv2_1", 64, 128), ("conv2_2", 128, 128),
             ("conv3_1", 128, 256), ("conv3_2", 256, 256), ("conv3_3", 256, 256), ("conv3_4", 256, 256),
             ("conv4_1", 256, 512), ("conv4_2", 512, 512), ("conv4_3_CPM", 512, 256), ("conv4_4_CPM", 256, 256),
             ("conv4_5_CPM", 256, 256), ("conv4_6_CPM", 256, 256), ("conv4_7_CPM", 256, 128)]
    shapes = {name: (3, 3, i, o) for name, i, o in trunk}
    shapes.update(conv5_1_CPM=(1, 1, 128, 512), conv5_2_CPM=(1, 1, 512, 15))
    for s in range(2, 7):
        shapes[f"Mconv1_stage{s}"] = (7, 7, 15 + 128 + 1, 128)
        shapes.update({f"Mconv{i}_stage{s}": (7, 7, 128, 128) for i in range(2, 6)})
        shapes[f"Mconv6_stage{s}"], shapes[f"Mconv7_stage{s}"] = (1, 1, 128, 128), (1, 1, 128, 15)
    return shapes


def _conv(p: dict[str, np.ndarray], x: tf.Tensor, name: str, stride: int = 1, padding: str = "SAME",
          groups: int = 1, relu: bool = True) -> tf.Tensor:
    parts = zip(tf.split(x, groups, 3), tf.split(p[f"{name}/W"], groups, 3))
    x = tf.concat([tf.nn.conv2d(a, w, stride, padding) for a, w in parts], 3) + p[f"{name}/b"]
    return tf.nn.relu(x) if relu else x


def _fc(p: dict[str, np.ndarray], x: tf.Tensor, name: str) -> tf.Tensor:
    return tf.nn.relu(tf.reshape(x, [x.shape[0], -1]) @ p[f"{name}/W"] + p[f"{name}/b"])


def alexnet_features(p: dict[str, np.ndarray], images: np.ndarray) -> np.ndarray:
    """fc7's output for NHWC RGB ``images`` of 227x227, mean already subtracted."""
    x = _conv(p, tf.constant(images, tf.float32), "conv1", 4, "VALID")
    x = tf.nn.max_pool2d(tf.nn.lrn(x, 2, 1.0, 2e-5, 0.75), 3, 2, "VALID")
    x = tf.nn.max_pool2d(tf.nn.lrn(_conv(p, x, "conv2", groups=2), 2, 1.0, 2e-5, 0.75), 3, 2, "VALID")
    x = _conv(p, _conv(p, _conv(p, x, "conv3"), "conv4", groups=2), "conv5", groups=2)
    x = tf.nn.max_pool2d(x, 3, 2, "VALID")
    return _fc(p, _fc(p, x, "fc6"), "fc7").numpy()


def vgg_features(p: dict[str, np.ndarray], images: np.ndarray, depth: int) -> np.ndarray:
    """fc7's output for NHWC RGB ``images`` of 224x224, channel means already subtracted."""
    x = tf.constant(images, tf.float32)
    for group, count in enumerate(VGG_GROUPS[depth], 1):
        for i in range(1, count + 1):
            x = _conv(p, x, f"conv{group}_{i}")
        x = tf.nn.max_pool2d(x, 2, 2, "VALID")
    return _fc(p, _fc(p, x, "fc6"), "fc7").numpy()


def cpm_features(p: dict[str, np.ndarray], image: np.ndarray) -> np.ndarray:
    """The input of ``Mconv7_stage6`` (46x46x128) for one BGR ``image`` of 368x368 in [0, 255]."""
    grid = np.arange(368) - 184.0
    gmap = np.exp(-(grid[:, None] ** 2 + grid[None, :] ** 2) / 2 / 21 ** 2).astype("float32")
    center = tf.nn.avg_pool2d(np.pad(gmap, [(0, 1), (0, 1)])[None, :, :, None], 9, 8, "VALID")
    x = tf.constant(image[None] / 256 - 0.5, tf.float32)
    for names in [["conv1_1", "conv1_2"], ["conv2_1", "conv2_2"], ["conv3_1", "conv3_2", "conv3_3", "conv3_4"]]:
        for name in names:
            x = _conv(p, x, name)
        x = tf.nn.max_pool2d(x, 2, 2, "VALID")
    for name in ["conv4_1", "conv4_2", "conv4_3_CPM", "conv4_4_CPM", "conv4_5_CPM", "conv4_6_CPM", "conv4_7_CPM"]:
        x = _conv(p, x, name)
    shared = x
    out = _conv(p, _conv(p, shared, "conv5_1_CPM"), "conv5_2_CPM", relu=False)
    for stage in range(2, 7):
        x = tf.concat([out, shared, center], 3)
        for i in range(1, 7):
            x = _conv(p, x, f"Mconv{i}_stage{stage}")
        if stage < 6:
            out = _conv(p, x, f"Mconv7_stage{stage}", relu=False)
    return x.numpy()[0]


def resize_bilinear_tf1(maps: np.ndarray, size: int) -> np.ndarray:
    """TF1's ``tf.image.resize_bilinear`` (no aligned corners, no half-pixel centers) of HxWxC ``maps`` to a
    square ``size``: output pixel i samples the input at i * H / size, clamped at the last row."""
    def axis(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        src = np.arange(size) * (n / size)
        lo = np.floor(src).astype(int)
        return lo, np.minimum(lo + 1, n - 1), (src - lo).astype("float32")

    (y0, y1, fy), (x0, x1, fx) = axis(maps.shape[0]), axis(maps.shape[1])
    rows = maps[y0] * (1 - fy)[:, None, None] + maps[y1] * fy[:, None, None]
    return rows[:, x0] * (1 - fx)[None, :, None] + rows[:, x1] * fx[None, :, None]
