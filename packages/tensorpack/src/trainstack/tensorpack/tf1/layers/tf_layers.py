"""TF1's functional ``tf.layers`` (``tfv1.layers``), which TensorFlow 2.21 with Keras 3 no longer has.

tensorpack's ``basics/mnist-tflayers.py`` writes its model in ``tf.layers.conv2d``, ``dense``,
``max_pooling2d``, ``flatten`` and ``dropout`` (with ``tf = tfv1``), and ``argscope`` over them after
``enable_argscope_for_module(tf.layers)``. These functions are TF1's, with its signatures, defaults
(padding ``'valid'``, Glorot-uniform kernels, zero biases, ``dropout(training=False)``) and variable
names (``<name>/kernel``, ``<name>/bias``), built as tensorpack's own layer functions are: under
``tf.compat.v1.variable_scope(name)`` with the room's ``get_variable`` (created on the first build of
the first tower, reused by every later trace and tower, recorded for checkpoints and predictors). A
layer given no ``name`` is named as TF1 named it: ``conv2d``, ``conv2d_1``, ... in the order of the
calls in one build of the tower (the same names in every tower, as TF1's reused tower scopes gave).
They run only in a tower function (``build_graph``); elsewhere they raise an error naming the layer.

TF1's other ``tf.layers`` names (``batch_normalization``, ``conv1d``, the layer classes, ...) raise a
:class:`TF1CallError` naming what to use instead; so do the regularizer and constraint arguments.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tensorflow as tf

from ..switch import TF1CallError, current
from .args import layout, shape2d, shape4d
from .context import get_variable, layer_label, tower_of

__all__ = ["conv2d", "conv2d_transpose", "dense", "max_pooling2d", "average_pooling2d", "flatten", "dropout"]

_KERAS = ("a keras.layers.{cls} made once in ModelDesc.__init__ and called in build_graph")
#: TF1's other tf.layers names, and what to use instead
_REPLACEMENTS = {
    "batch_normalization": "BatchNorm('bn', x) (from trainstack.tensorpack import *), or "
                           + _KERAS.format(cls="BatchNormalization") + " with training=self.training",
    **{name: _KERAS.format(cls=cls) for name, cls in [
        ("conv1d", "Conv1D"), ("conv3d", "Conv3D"), ("conv3d_transpose", "Conv3DTranspose"),
        ("separable_conv1d", "SeparableConv1D"), ("separable_conv2d", "SeparableConv2D"),
        ("max_pooling1d", "MaxPooling1D"), ("max_pooling3d", "MaxPooling3D"),
        ("average_pooling1d", "AveragePooling1D"), ("average_pooling3d", "AveragePooling3D")]},
    **{cls: _KERAS.format(cls=cls) for cls in [
        "Conv1D", "Conv2D", "Conv3D", "Conv2DTranspose", "Conv3DTranspose", "SeparableConv1D", "SeparableConv2D",
        "Dense", "Dropout", "Flatten", "BatchNormalization", "MaxPooling1D", "MaxPooling2D", "MaxPooling3D",
        "AveragePooling1D", "AveragePooling2D", "AveragePooling3D"]},
    "Layer": "keras.layers.Layer", "InputSpec": "keras.layers.InputSpec",
}


def __getattr__(name: str) -> Any:
    if name in _REPLACEMENTS:
        raise TF1CallError(f"tf.layers.{name}: TF1's layer is not provided by trainstack's tfv1.layers (which has "
                           f"{', '.join(__all__)}); use {_REPLACEMENTS[name]}")
    raise AttributeError(f"module 'tfv1.layers' has no attribute {name!r}")


def _refuse(call: str, **arguments: Any) -> None:
    given = [name for name, value in arguments.items() if value is not None]
    if given:
        raise TF1CallError(f"tf.layers.{call}({given[0]}=...): TF1's REGULARIZATION_LOSSES collection and "
                           "variable constraints do not exist in TensorFlow 2; add regularize_cost('<name>/kernel', "
                           "l2_regularizer(...)) to the cost in build_graph instead, and drop the constraint")


def _scope_name(base: str, name: str | None) -> str:
    """``name``, or TF1's default: ``base``, ``base_1``, ... in call order within one build."""
    if name is not None:
        return name
    frame = current()
    assert frame is not None  # tower_of() checked it
    counts = frame.scratch.setdefault("tf.layers names", {})
    key = (tf.compat.v1.get_variable_scope().name, base)
    count = counts[key] = counts.get(key, -1) + 1
    return base if count == 0 else f"{base}_{count}"


def _variables(call: str, base: str, name: str | None, reuse: Any) -> Any:
    tower_of(f"tf.layers.{call}")
    return tf.compat.v1.variable_scope(_scope_name(base, name), reuse=reuse)


def _kernel_bias(call: str, kernel_shape: list[int], units: int, dtype: Any, use_bias: bool,
                 kernel_initializer: Any, bias_initializer: Any, trainable: bool) -> tuple[Any, Any]:
    kernel = get_variable(call, "kernel", kernel_shape,
                          kernel_initializer or tf.compat.v1.glorot_uniform_initializer(), dtype=dtype,
                          trainable=trainable)
    bias = (get_variable(call, "bias", [units], bias_initializer or tf.compat.v1.zeros_initializer(), dtype=dtype,
                         trainable=trainable) if use_bias else None)
    return kernel, bias


def _finish(out: tf.Tensor, bias: Any, fmt: str, activation: Callable | None) -> tf.Tensor:
    if bias is not None:
        out = tf.nn.bias_add(out, bias, data_format=fmt)
    return activation(out) if activation is not None else out


def _padding(call: str, padding: str) -> str:
    if not isinstance(padding, str) or padding.upper() not in ("SAME", "VALID"):
        raise ValueError(f"{layer_label(call)}: padding must be 'same' or 'valid', got {padding!r}")
    return padding.upper()


def _channels(call: str, inputs: tf.Tensor, fmt: str) -> int:
    if inputs.shape.rank != 4 or inputs.shape[3 if fmt == "NHWC" else 1] is None:
        raise ValueError(f"{layer_label(call)} takes a 4D input ({fmt}) with a known channel dimension, got "
                         f"shape {inputs.shape}")
    return int(inputs.shape[3 if fmt == "NHWC" else 1])


def conv2d(inputs: tf.Tensor, filters: int, kernel_size: Any, strides: Any = (1, 1), padding: str = "valid",
           data_format: str = "channels_last", dilation_rate: Any = (1, 1), activation: Callable | None = None,
           use_bias: bool = True, kernel_initializer: Any = None, bias_initializer: Any = None,
           kernel_regularizer: Any = None, bias_regularizer: Any = None, activity_regularizer: Any = None,
           kernel_constraint: Any = None, bias_constraint: Any = None, trainable: bool = True,
           name: str | None = None, reuse: Any = None) -> tf.Tensor:
    """TF1's ``tf.layers.conv2d``: variables ``kernel`` ``[kh, kw, in, filters]`` and ``bias``."""
    _refuse("conv2d", kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer,
            activity_regularizer=activity_regularizer, kernel_constraint=kernel_constraint,
            bias_constraint=bias_constraint)
    with _variables("conv2d", "conv2d", name, reuse):
        fmt = layout(data_format, "tf.layers.conv2d")
        channels = _channels("tf.layers.conv2d", inputs, fmt)
        kernel, bias = _kernel_bias("tf.layers.conv2d", shape2d(kernel_size, "kernel_size", "tf.layers.conv2d")
                                    + [channels, filters], filters, inputs.dtype, use_bias, kernel_initializer,
                                    bias_initializer, trainable)
        out = tf.nn.conv2d(inputs, kernel, strides=shape4d(strides, fmt, "strides", "tf.layers.conv2d"),
                           padding=_padding("tf.layers.conv2d", padding), data_format=fmt,
                           dilations=shape4d(dilation_rate, fmt, "dilation_rate", "tf.layers.conv2d"))
        return _finish(out, bias, fmt, activation)


def conv2d_transpose(inputs: tf.Tensor, filters: int, kernel_size: Any, strides: Any = (1, 1),
                     padding: str = "valid", data_format: str = "channels_last", activation: Callable | None = None,
                     use_bias: bool = True, kernel_initializer: Any = None, bias_initializer: Any = None,
                     kernel_regularizer: Any = None, bias_regularizer: Any = None, activity_regularizer: Any = None,
                     kernel_constraint: Any = None, bias_constraint: Any = None, trainable: bool = True,
                     name: str | None = None, reuse: Any = None) -> tf.Tensor:
    """TF1's ``tf.layers.conv2d_transpose``: ``kernel`` ``[kh, kw, filters, in]`` and ``bias``; the
    output's spatial size is ``in * stride`` (``'same'``) or ``in * stride + max(k - stride, 0)``."""
    call = "tf.layers.conv2d_transpose"
    _refuse("conv2d_transpose", kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer,
            activity_regularizer=activity_regularizer, kernel_constraint=kernel_constraint,
            bias_constraint=bias_constraint)
    with _variables("conv2d_transpose", "conv2d_transpose", name, reuse):
        fmt = layout(data_format, call)
        channels = _channels(call, inputs, fmt)
        pad = _padding(call, padding)
        step = shape2d(strides, "strides", call)
        size = shape2d(kernel_size, "kernel_size", call)
        kernel, bias = _kernel_bias(call, size + [filters, channels], filters, inputs.dtype, use_bias,
                                    kernel_initializer, bias_initializer, trainable)
        extra = [max(k - s, 0) for k, s in zip(size, step)] if pad == "VALID" else [0, 0]
        axes = [1, 2] if fmt == "NHWC" else [2, 3]
        dynamic, static = tf.shape(inputs), inputs.shape.as_list()
        spatial = [dynamic[a] * s + e for a, s, e in zip(axes, step, extra)]
        known = [None if static[a] is None else static[a] * s + e for a, s, e in zip(axes, step, extra)]
        shape, shape_static = (([dynamic[0], *spatial, filters], [static[0], *known, filters]) if fmt == "NHWC"
                               else ([dynamic[0], filters, *spatial], [static[0], filters, *known]))
        out = tf.nn.conv2d_transpose(inputs, kernel, tf.stack(shape), shape4d(strides, fmt, "strides", call),
                                     padding=pad, data_format=fmt)
        out.set_shape(shape_static)
        return _finish(out, bias, fmt, activation)


def dense(inputs: tf.Tensor, units: int, activation: Callable | None = None, use_bias: bool = True,
          kernel_initializer: Any = None, bias_initializer: Any = None, kernel_regularizer: Any = None,
          bias_regularizer: Any = None, activity_regularizer: Any = None, kernel_constraint: Any = None,
          bias_constraint: Any = None, trainable: bool = True, name: str | None = None,
          reuse: Any = None) -> tf.Tensor:
    """TF1's ``tf.layers.dense``: ``activation(inputs @ kernel + bias)`` over the last axis
    (``kernel`` ``[in, units]``); an input of rank > 2 keeps its other axes."""
    _refuse("dense", kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer,
            activity_regularizer=activity_regularizer, kernel_constraint=kernel_constraint,
            bias_constraint=bias_constraint)
    with _variables("dense", "dense", name, reuse):
        if inputs.shape.rank is None or inputs.shape[-1] is None:
            raise ValueError(f"{layer_label('tf.layers.dense')}: the input's last dimension must be known, got "
                             f"shape {inputs.shape}")
        kernel, bias = _kernel_bias("tf.layers.dense", [int(inputs.shape[-1]), units], units, inputs.dtype,
                                    use_bias, kernel_initializer, bias_initializer, trainable)
        if inputs.shape.rank == 2:
            out = tf.matmul(inputs, kernel)
        else:
            out = tf.tensordot(inputs, kernel, [[inputs.shape.rank - 1], [0]])
            out.set_shape(inputs.shape[:-1].concatenate([units]))
        return _finish(out, bias, "NHWC", activation)


def _pool(op: Any, call: str, inputs: tf.Tensor, pool_size: Any, strides: Any, padding: str, data_format: str,
          name: str | None) -> tf.Tensor:
    fmt = layout(data_format, call)
    return op(inputs, shape2d(pool_size, "pool_size", call), shape2d(strides, "strides", call),
              _padding(call, padding), data_format=fmt, name=name)


def max_pooling2d(inputs: tf.Tensor, pool_size: Any, strides: Any, padding: str = "valid",
                  data_format: str = "channels_last", name: str | None = None) -> tf.Tensor:
    """TF1's ``tf.layers.max_pooling2d`` (no variables; ``strides`` is required, as in TF1)."""
    return _pool(tf.nn.max_pool2d, "tf.layers.max_pooling2d", inputs, pool_size, strides, padding, data_format, name)


def average_pooling2d(inputs: tf.Tensor, pool_size: Any, strides: Any, padding: str = "valid",
                      data_format: str = "channels_last", name: str | None = None) -> tf.Tensor:
    """TF1's ``tf.layers.average_pooling2d`` (a ``'same'`` border averages the input's elements only)."""
    return _pool(tf.nn.avg_pool2d, "tf.layers.average_pooling2d", inputs, pool_size, strides, padding,
                 data_format, name)


def flatten(inputs: tf.Tensor, name: str | None = None, data_format: str = "channels_last") -> tf.Tensor:
    """TF1's ``tf.layers.flatten``: ``[batch, -1]``, channels-last order (a channels-first input is
    transposed first, as TF1 did)."""
    if layout(data_format, "tf.layers.flatten") == "NCHW" and inputs.shape.rank is not None and inputs.shape.rank > 2:
        inputs = tf.transpose(inputs, [0, *range(2, inputs.shape.rank), 1])
    rest = inputs.shape.as_list()[1:]
    if None not in rest:
        size = 1
        for d in rest:
            size *= d
        return tf.reshape(inputs, [-1, size], name=name)
    return tf.reshape(inputs, tf.stack([tf.shape(inputs)[0], -1]), name=name)


def dropout(inputs: tf.Tensor, rate: Any = 0.5, noise_shape: Any = None, seed: Any = None, training: Any = False,
            name: str | None = None) -> tf.Tensor:
    """TF1's ``tf.layers.dropout``: drops with probability ``rate`` when ``training`` (a bool or a
    boolean tensor; **False by default**, as in TF1: pass ``training=self.training``), else the
    identity; kept values are scaled by ``1 / (1 - rate)``."""
    def drop() -> tf.Tensor:
        return tf.nn.dropout(inputs, rate=rate, noise_shape=noise_shape, seed=seed, name=name)

    if isinstance(training, (tf.Tensor, tf.Variable)):
        static = tf.get_static_value(training) if isinstance(training, tf.Tensor) else None
        if static is None:
            return tf.cond(training, drop, lambda: tf.identity(inputs, name=name))
        training = bool(static)
    return drop() if training else tf.identity(inputs, name=name)
