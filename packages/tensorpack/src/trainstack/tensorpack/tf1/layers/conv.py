"""tensorpack's ``Conv2D`` and ``Conv2DTranspose`` (``Deconv2D``), with tensorpack 0.11's defaults.

Variables ``W`` (``[kh, kw, in/split, filters]``; transposed: ``[kh, kw, filters, in]``) and
``b``; ``W`` initialized by variance scaling with scale 2.0 over the fan-in, from an untruncated
normal (tensorpack's default, not Glorot's), ``b`` by zeros. Padding ``'same'`` by default.
``split`` is a group convolution (the groups computed one by one, which any device runs).
The output is named ``output`` in the layer's scope.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tensorflow as tf

from .args import layout, refuse_regularizers, shape2d, shape4d, tflayer_args
from .context import get_variable, layer_label
from .registry import attach_variables, layer_register

__all__ = ["Conv2D", "Conv2DTranspose", "Deconv2D", "default_kernel_initializer"]


def default_kernel_initializer() -> Any:
    """tensorpack 0.11's default kernel initializer of Conv2D, Conv2DTranspose and FullyConnected:
    ``VarianceScaling(2.0)`` over the fan-in, untruncated normal."""
    return tf.compat.v1.variance_scaling_initializer(scale=2.0, mode="fan_in", distribution="untruncated_normal")


def _padding(padding: str, layer: str) -> str:
    if not isinstance(padding, str) or padding.upper() not in ("SAME", "VALID"):
        raise ValueError(f"{layer_label(layer)}: padding must be 'same' or 'valid', got {padding!r}")
    return padding.upper()


def _channels(inputs: tf.Tensor, fmt: str, layer: str) -> int:
    if inputs.shape.rank != 4:
        raise ValueError(f"{layer_label(layer)} takes a 4D input ({fmt}), got shape {inputs.shape}")
    channels = inputs.shape[3 if fmt == "NHWC" else 1]
    if channels is None:
        raise ValueError(f"{layer_label(layer)}: the input's channel dimension must be known, got shape "
                         f"{inputs.shape}")
    return int(channels)


def _finish(layer: str, out: tf.Tensor, b: Any, fmt: str, activation: Callable | None) -> tf.Tensor:
    if b is not None:
        out = tf.nn.bias_add(out, b, data_format=fmt)
    if activation is not None:
        out = activation(out)
    return tf.identity(out, name="output")


@layer_register(log_shape=True)
@tflayer_args(args_names=["filters", "kernel_size"],
              name_mapping={"out_channel": "filters", "kernel_shape": "kernel_size", "stride": "strides"})
def Conv2D(inputs: tf.Tensor, filters: int, kernel_size: Any, strides: Any = (1, 1), padding: str = "same",  # noqa: N802
           data_format: str = "channels_last", dilation_rate: Any = (1, 1), activation: Callable | None = None,
           use_bias: bool = True, kernel_initializer: Any = None,
           bias_initializer: Any = tf.compat.v1.zeros_initializer(), kernel_regularizer: Any = None,
           bias_regularizer: Any = None, activity_regularizer: Any = None, split: int = 1) -> tf.Tensor:
    """A 2D convolution, ``Conv2D('name', x, filters, kernel_size, ...)`` (tensorpack's)."""
    refuse_regularizers("Conv2D", kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer,
                        activity_regularizer=activity_regularizer)
    fmt = layout(data_format, "Conv2D")
    in_channels = _channels(inputs, fmt, "Conv2D")
    if in_channels % split or filters % split:
        raise ValueError(f"{layer_label('Conv2D')}: split={split} must divide the input channels ({in_channels}) "
                         f"and the filters ({filters})")
    kernel = shape2d(kernel_size, "kernel_size", "Conv2D")
    W = get_variable("Conv2D", "W", kernel + [in_channels // split, filters],  # noqa: N806 - tensorpack's name
                     kernel_initializer or default_kernel_initializer(), dtype=inputs.dtype)
    b = get_variable("Conv2D", "b", [filters], bias_initializer, dtype=inputs.dtype) if use_bias else None
    conv_args = dict(strides=shape4d(strides, fmt), padding=_padding(padding, "Conv2D"), data_format=fmt,
                     dilations=shape4d(dilation_rate, fmt, "dilation_rate"))
    if split == 1:
        out = tf.nn.conv2d(inputs, W, **conv_args)
    else:
        axis = 3 if fmt == "NHWC" else 1
        groups = zip(tf.split(inputs, split, axis), tf.split(W, split, 3))
        out = tf.concat([tf.nn.conv2d(x, w, **conv_args) for x, w in groups], axis)
    return attach_variables(_finish("Conv2D", out, b, fmt, activation), W=W, b=b)


@layer_register(log_shape=True)
@tflayer_args(args_names=["filters", "kernel_size", "strides"],
              name_mapping={"out_channel": "filters", "kernel_shape": "kernel_size", "stride": "strides"})
def Conv2DTranspose(inputs: tf.Tensor, filters: int, kernel_size: Any, strides: Any = (1, 1),  # noqa: N802
                    padding: str = "same", data_format: str = "channels_last", activation: Callable | None = None,
                    use_bias: bool = True, kernel_initializer: Any = None,
                    bias_initializer: Any = tf.compat.v1.zeros_initializer(), kernel_regularizer: Any = None,
                    bias_regularizer: Any = None, activity_regularizer: Any = None) -> tf.Tensor:
    """A transposed 2D convolution (tensorpack's ``Conv2DTranspose``, also ``Deconv2D``): the output's
    spatial size is ``in * stride`` (``'same'``) or ``in * stride + max(k - stride, 0)`` (``'valid'``)."""
    refuse_regularizers("Conv2DTranspose", kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer,
                        activity_regularizer=activity_regularizer)
    fmt = layout(data_format, "Conv2DTranspose")
    in_channels = _channels(inputs, fmt, "Conv2DTranspose")
    pad = _padding(padding, "Conv2DTranspose")
    stride2 = shape2d(strides, "strides", "Conv2DTranspose")
    kernel = shape2d(kernel_size, "kernel_size", "Conv2DTranspose")
    extra = [max(k - s, 0) for k, s in zip(kernel, stride2)] if pad == "VALID" else [0, 0]
    dynamic, static = tf.shape(inputs), inputs.shape.as_list()
    spatial = [1, 2] if fmt == "NHWC" else [2, 3]
    size = [dynamic[a] * s + e for a, s, e in zip(spatial, stride2, extra)]
    size_static = [None if static[a] is None else static[a] * s + e for a, s, e in zip(spatial, stride2, extra)]
    if fmt == "NHWC":
        out_shape, out_static = [dynamic[0], *size, filters], [static[0], *size_static, filters]
    else:
        out_shape, out_static = [dynamic[0], filters, *size], [static[0], filters, *size_static]
    W = get_variable("Conv2DTranspose", "W", kernel + [filters, in_channels],  # noqa: N806 - tensorpack's name
                     kernel_initializer or default_kernel_initializer(), dtype=inputs.dtype)
    b = get_variable("Conv2DTranspose", "b", [filters], bias_initializer, dtype=inputs.dtype) if use_bias else None
    out = tf.nn.conv2d_transpose(inputs, W, tf.stack(out_shape), shape4d(strides, fmt, "strides", "Conv2DTranspose"), padding=pad,
                                 data_format=fmt)
    out.set_shape(out_static)
    return attach_variables(_finish("Conv2DTranspose", out, b, fmt, activation), W=W, b=b)


#: tensorpack's other name for Conv2DTranspose
Deconv2D = Conv2DTranspose
