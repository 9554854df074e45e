"""tensorpack's nonlinearities: ``BNReLU``, ``PReLU``, ``Maxout``.

``BNReLU(x)`` is ``relu(BatchNorm('bn', x))`` (as a convolution's ``activation``, its variables
are ``<conv>/bn/gamma``, ...). ``PReLU`` is ``0.5 * ((1 + alpha) * x + (1 - alpha) * |x|)`` with
a learned scalar ``alpha`` (initially 0.001). ``Maxout(x, k)`` takes the maximum of each group
of ``k`` consecutive channels (channels last).
"""
from __future__ import annotations

from typing import Any

import tensorflow as tf

from .batch_norm import BatchNorm
from .context import get_variable, layer_label
from .registry import attach_variables, layer_register

__all__ = ["BNReLU", "PReLU", "Maxout"]


@layer_register(use_scope=None)
def Maxout(x: tf.Tensor, num_unit: int) -> tf.Tensor:  # noqa: N802
    """The maximum over each group of ``num_unit`` channels of a 2D or 4D (NHWC) input."""
    shape = x.shape.as_list()
    if len(shape) not in (2, 4) or shape[-1] is None or shape[-1] % num_unit:
        raise ValueError(f"{layer_label('Maxout')}: needs a 2D or 4D input whose last dimension is known and "
                         f"divisible by num_unit={num_unit}, got shape {x.shape}")
    groups = shape[-1] // num_unit
    if len(shape) == 4:
        x = tf.reshape(x, [-1, shape[1], shape[2], groups, num_unit])
    else:
        x = tf.reshape(x, [-1, groups, num_unit])
    return tf.reduce_max(x, len(shape), name="output")


@layer_register()
def PReLU(x: tf.Tensor, init: float = 0.001, name: Any = None) -> tf.Tensor:  # noqa: N802
    """Parametric ReLU with a learned scalar slope ``alpha`` (``name=`` is tensorpack's deprecated
    name of the output)."""
    alpha = get_variable("PReLU", "alpha", [], tf.compat.v1.constant_initializer(init))
    out = tf.multiply((1 + alpha) * x + (1 - alpha) * tf.abs(x), 0.5, name=name or "output")
    return attach_variables(out, alpha=alpha)


@layer_register(use_scope=None)
def BNReLU(x: tf.Tensor, name: Any = None) -> tf.Tensor:  # noqa: N802
    """``relu(BatchNorm('bn', x))``."""
    return tf.nn.relu(BatchNorm("bn", x), name=name)
