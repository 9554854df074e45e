"""tensorpack's ``LayerNorm`` and ``InstanceNorm``: normalization by each sample's own statistics.

``LayerNorm`` normalizes each sample over all its non-batch dimensions, ``InstanceNorm`` each
sample's channel over its spatial dimensions (4D inputs). Both then scale by ``gamma`` (ones)
and shift by ``beta`` (zeros), per channel; ``epsilon`` 1e-5. Same in training and inference.
"""
from __future__ import annotations

from typing import Any

import tensorflow as tf

from .args import layout, tflayer_args
from .context import get_variable, layer_label
from .registry import attach_variables, layer_register

__all__ = ["LayerNorm", "InstanceNorm"]


def _affine(layer: str, channels: int, per_channel: list[int], center: bool, scale: bool,
            gamma_initializer: Any, dtype: Any) -> tuple[Any, Any, Any, Any]:
    """(beta, gamma) shaped to broadcast, and the variables (or None)."""
    beta = get_variable(layer, "beta", [channels], tf.compat.v1.zeros_initializer()) if center else None
    gamma = get_variable(layer, "gamma", [channels], gamma_initializer) if scale else None
    ndims = len(per_channel)
    beta_t = tf.reshape(beta, per_channel) if beta is not None else tf.zeros([1] * ndims, dtype)
    gamma_t = tf.reshape(gamma, per_channel) if gamma is not None else tf.ones([1] * ndims, dtype)
    return beta_t, gamma_t, beta, gamma


@layer_register()
@tflayer_args(args_names=[], name_mapping={"use_bias": "center", "use_scale": "scale",
                                            "gamma_init": "gamma_initializer"})
def LayerNorm(x: tf.Tensor, epsilon: float = 1e-5, *, center: bool = True, scale: bool = True,  # noqa: N802
              gamma_initializer: Any = tf.compat.v1.ones_initializer(),
              data_format: str = "channels_last") -> tf.Tensor:
    """Layer normalization of a 2D or 4D input, ``LayerNorm('ln', x)`` (tensorpack's)."""
    fmt = layout(data_format, "LayerNorm")
    shape = x.shape.as_list()
    if len(shape) not in (2, 4):
        raise ValueError(f"{layer_label('LayerNorm')} takes a 2D or 4D input, got shape {x.shape}")
    channels = shape[1] if len(shape) == 2 or fmt == "NCHW" else shape[3]
    if len(shape) == 2:
        per_channel = [1, channels]
    else:
        per_channel = [1, channels, 1, 1] if fmt == "NCHW" else [1, 1, 1, channels]
    mean, variance = tf.nn.moments(x, list(range(1, len(shape))), keepdims=True)
    beta_t, gamma_t, beta, gamma = _affine("LayerNorm", channels, per_channel, center, scale, gamma_initializer,
                                           x.dtype)
    out = tf.nn.batch_normalization(x, mean, variance, beta_t, gamma_t, epsilon, name="output")
    return attach_variables(out, gamma=gamma, beta=beta)


@layer_register()
@tflayer_args(args_names=[], name_mapping={"gamma_init": "gamma_initializer"})
def InstanceNorm(x: tf.Tensor, epsilon: float = 1e-5, *, center: bool = True, scale: bool = True,  # noqa: N802
                 gamma_initializer: Any = tf.compat.v1.ones_initializer(), data_format: str = "channels_last",
                 use_affine: bool | None = None) -> tf.Tensor:
    """Instance normalization of a 4D input, ``InstanceNorm('in', x)`` (tensorpack's; ``use_affine``
    is its deprecated form of ``center=scale=``)."""
    fmt = layout(data_format, "InstanceNorm")
    shape = x.shape.as_list()
    if len(shape) != 4:
        raise ValueError(f"{layer_label('InstanceNorm')} takes a 4D input, got shape {x.shape}")
    if use_affine is not None:
        center = scale = bool(use_affine)
    if fmt == "NHWC":
        axes, channels = [1, 2], shape[3]
        per_channel = [1, 1, 1, channels]
    else:
        axes, channels = [2, 3], shape[1]
        per_channel = [1, channels, 1, 1]
    if channels is None:
        raise ValueError(f"{layer_label('InstanceNorm')}: the channel dimension must be known, got shape {x.shape}")
    mean, variance = tf.nn.moments(x, axes, keepdims=True)
    beta_t, gamma_t, beta, gamma = _affine("InstanceNorm", channels, per_channel, center, scale,
                                           gamma_initializer, x.dtype)
    out = tf.nn.batch_normalization(x, mean, variance, beta_t, gamma_t, epsilon, name="output")
    return attach_variables(out, gamma=gamma, beta=beta)
