"""tensorpack's ``FullyConnected``: a dense layer over the input flattened to ``[batch, -1]``.

Variables ``W`` (``[in_dim, units]``, variance scaling 2.0 over the fan-in, untruncated normal:
tensorpack's default) and ``b`` (zeros). The output is named ``output`` in the layer's scope.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import tensorflow as tf

from .args import refuse_regularizers, tflayer_args
from .context import get_variable, layer_label
from .conv import default_kernel_initializer
from .registry import attach_variables, layer_register

__all__ = ["FullyConnected", "batch_flatten"]


def batch_flatten(x: tf.Tensor) -> tf.Tensor:
    """``x`` reshaped to ``[batch, prod(other dimensions)]``."""
    rest = x.shape.as_list()[1:]
    if None not in rest:
        return tf.reshape(x, [-1, int(np.prod(rest))])
    return tf.reshape(x, tf.stack([tf.shape(x)[0], -1]))


@layer_register(log_shape=True)
@tflayer_args(args_names=["units"], name_mapping={"out_dim": "units"})
def FullyConnected(inputs: tf.Tensor, units: int, activation: Callable | None = None, use_bias: bool = True,  # noqa: N802
                   kernel_initializer: Any = None, bias_initializer: Any = tf.compat.v1.zeros_initializer(),
                   kernel_regularizer: Any = None, bias_regularizer: Any = None,
                   activity_regularizer: Any = None) -> tf.Tensor:
    """``activation(flatten(x) @ W + b)``, ``FullyConnected('name', x, units, ...)`` (tensorpack's)."""
    refuse_regularizers("FullyConnected", kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer,
                        activity_regularizer=activity_regularizer)
    x = batch_flatten(inputs)
    in_dim = x.shape[1]
    if in_dim is None:
        raise ValueError(f"{layer_label('FullyConnected')}: the input's non-batch dimensions must be known, got "
                         f"shape {inputs.shape}")
    W = get_variable("FullyConnected", "W", [int(in_dim), units],  # noqa: N806 - tensorpack's name
                     kernel_initializer or default_kernel_initializer(), dtype=x.dtype)
    b = get_variable("FullyConnected", "b", [units], bias_initializer, dtype=x.dtype) if use_bias else None
    out = tf.matmul(x, W)
    if b is not None:
        out = tf.nn.bias_add(out, b)
    if activation is not None:
        out = activation(out)
    return attach_variables(tf.identity(out, name="output"), W=W, b=b)
