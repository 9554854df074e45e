"""tensorpack's pooling layers: ``MaxPooling``, ``AvgPooling``, ``GlobalAvgPooling``, ``FixedUnPooling``.

``MaxPooling``/``AvgPooling`` take ``pool_size`` (``shape``) and ``strides`` (``stride``,
default: ``pool_size``), padding ``'valid'`` by default; an average over a ``'same'`` border
counts only the input's elements, as ``tf.layers`` did. ``FixedUnPooling`` is the Kronecker
product of each channel with a fixed matrix (default: 1 at the top-left corner, zeros
elsewhere). Outputs are named ``output`` in the layer's scope.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import tensorflow as tf

from .args import layout, shape2d, tflayer_args
from .context import layer_label
from .registry import layer_register

__all__ = ["MaxPooling", "AvgPooling", "GlobalAvgPooling", "FixedUnPooling"]


def _pool(op: Any, layer: str, inputs: tf.Tensor, pool_size: Any, strides: Any, padding: str,
          data_format: str) -> tf.Tensor:
    if not isinstance(padding, str) or padding.upper() not in ("SAME", "VALID"):
        raise ValueError(f"{layer_label(layer)}: padding must be 'same' or 'valid', got {padding!r}")
    fmt = layout(data_format, layer)
    size = shape2d(pool_size, "pool_size", layer)
    step = shape2d(pool_size if strides is None else strides, "strides", layer)
    return tf.identity(op(inputs, size, step, padding.upper(), data_format=fmt), name="output")


@layer_register(log_shape=True)
@tflayer_args(args_names=["pool_size", "strides"], name_mapping={"shape": "pool_size", "stride": "strides"})
def MaxPooling(inputs: tf.Tensor, pool_size: Any, strides: Any = None, padding: str = "valid",  # noqa: N802
               data_format: str = "channels_last") -> tf.Tensor:
    """Max pooling, ``MaxPooling('pool', x, 2)`` (tensorpack's)."""
    return _pool(tf.nn.max_pool2d, "MaxPooling", inputs, pool_size, strides, padding, data_format)


@layer_register(log_shape=True)
@tflayer_args(args_names=["pool_size", "strides"], name_mapping={"shape": "pool_size", "stride": "strides"})
def AvgPooling(inputs: tf.Tensor, pool_size: Any, strides: Any = None, padding: str = "valid",  # noqa: N802
               data_format: str = "channels_last") -> tf.Tensor:
    """Average pooling, ``AvgPooling('pool', x, 2)`` (tensorpack's)."""
    return _pool(tf.nn.avg_pool2d, "AvgPooling", inputs, pool_size, strides, padding, data_format)


@layer_register(log_shape=True)
def GlobalAvgPooling(x: tf.Tensor, data_format: str = "channels_last") -> tf.Tensor:  # noqa: N802
    """The mean over the spatial dimensions of a 4D input: ``[batch, channels]``."""
    if x.shape.rank != 4:
        raise ValueError(f"{layer_label('GlobalAvgPooling')} takes a 4D input, got shape {x.shape}")
    axes = [1, 2] if layout(data_format, "GlobalAvgPooling") == "NHWC" else [2, 3]
    return tf.reduce_mean(x, axes, name="output")


@layer_register(log_shape=True)
def FixedUnPooling(x: tf.Tensor, shape: Any, unpool_mat: Any = None,  # noqa: N802
                   data_format: str = "channels_last") -> tf.Tensor:
    """Each ``[h, w]`` plane of ``x`` Kronecker-multiplied by ``unpool_mat`` (``shape``, default 1
    at the top-left corner): ``out[i*sh + p, j*sw + q] = x[i, j] * unpool_mat[p, q]``."""
    if x.shape.rank != 4:
        raise ValueError(f"{layer_label('FixedUnPooling')} takes a 4D input, got shape {x.shape}")
    sh, sw = shape2d(shape)
    if unpool_mat is None:
        mat = np.zeros([sh, sw], "float32")
        mat[0, 0] = 1
        unpool_mat = mat
    unpool_mat = tf.cast(tf.convert_to_tensor(unpool_mat), x.dtype)
    if unpool_mat.shape.as_list() != [sh, sw]:
        raise ValueError(f"{layer_label('FixedUnPooling')}: unpool_mat has shape {unpool_mat.shape.as_list()}, "
                         f"expected {[sh, sw]}")
    nchw = layout(data_format, "FixedUnPooling") == "NCHW"
    if nchw:
        x = tf.transpose(x, [0, 2, 3, 1])
    static = x.shape.as_list()
    dynamic = tf.shape(x)
    h, w, c = [static[i] if static[i] is not None else dynamic[i] for i in (1, 2, 3)]
    # [B, H, 1, W, 1, C] * [1, 1, sh, 1, sw, 1] -> [B, H*sh, W*sw, C]
    product = x[:, :, None, :, None, :] * tf.reshape(unpool_mat, [1, 1, sh, 1, sw, 1])
    out = tf.reshape(product, tf.stack([-1, h * sh, w * sw, c]))
    out.set_shape([static[0], None if static[1] is None else static[1] * sh,
                   None if static[2] is None else static[2] * sw, static[3]])
    if nchw:
        out = tf.transpose(out, [0, 3, 1, 2])
    return tf.identity(out, name="output")
