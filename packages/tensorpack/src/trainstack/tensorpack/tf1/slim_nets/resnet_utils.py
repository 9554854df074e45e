"""slim's ``resnet_utils``: the ResNet ``Block``, ``subsample``, ``conv2d_same``, ``stack_blocks_dense``
and ``resnet_arg_scope`` (TF1's ``tf.contrib.slim.nets``), over the room's slim functions.

- ``conv2d_same(x, n, k, stride, rate)``: a stride-1 ``'SAME'`` convolution, or for stride > 1 an
  explicit zero padding of ``k_eff - 1`` (``k_eff = k + (k - 1)(rate - 1)``; ``(k_eff - 1) // 2``
  before, the rest after) and a ``'VALID'`` convolution, so that the output does not depend on
  whether the input's size is even;
- ``stack_blocks_dense(net, blocks, output_stride)``: each block under ``variable_scope(block.scope)``,
  each unit under ``unit_<i>``, atrous convolution past ``output_stride``;
- ``resnet_arg_scope(weight_decay=1e-4, batch_norm_decay=0.997, batch_norm_epsilon=1e-5,
  batch_norm_scale=True)``: ``conv2d`` with He's ``variance_scaling_initializer()``, an L2
  ``weights_regularizer``, ``relu`` and ``batch_norm`` (``updates_collections`` UPDATE_OPS), and
  ``max_pool2d`` with ``'SAME'`` padding.

``stack_blocks_dense`` records each block's output in the ``end_points`` dict it is given (TF1
collected it in the network's outputs collection).
"""
from __future__ import annotations

import collections
import inspect
from typing import Any

import tensorflow as tf

from ..contrib_batch_norm import batch_norm
from ..contrib_layers import conv2d, max_pool2d, variance_scaling_initializer
from ..regularize import l2_regularizer
from ..slim_arg_scope import add_arg_scope, arg_scope

__all__ = ["Block", "subsample", "conv2d_same", "stack_blocks_dense", "resnet_arg_scope"]


class Block(collections.namedtuple("Block", ["scope", "unit_fn", "args"])):
    """A ResNet block: its scope name, the unit function, and one dict of arguments per unit."""


def subsample(inputs: tf.Tensor, factor: int, scope: Any = None) -> tf.Tensor:
    """The input itself (factor 1), else a 1x1 max pooling of stride ``factor``."""
    if factor == 1:
        return inputs
    return max_pool2d(inputs, [1, 1], stride=factor, scope=scope)


def conv2d_same(inputs: tf.Tensor, num_outputs: int, kernel_size: int, stride: int, rate: int = 1,
                scope: Any = None) -> tf.Tensor:
    """A strided convolution with ``'SAME'``-like padding independent of the input's parity."""
    if stride == 1:
        return conv2d(inputs, num_outputs, kernel_size, stride=1, rate=rate, padding="SAME", scope=scope)
    effective = kernel_size + (kernel_size - 1) * (rate - 1)
    begin = (effective - 1) // 2
    end = effective - 1 - begin
    inputs = tf.pad(inputs, [[0, 0], [begin, end], [begin, end], [0, 0]])
    return conv2d(inputs, num_outputs, kernel_size, stride=stride, rate=rate, padding="VALID", scope=scope)


@add_arg_scope
def stack_blocks_dense(net: tf.Tensor, blocks: list, output_stride: Any = None, outputs_collections: Any = None,
                       end_points: dict | None = None) -> tf.Tensor:
    """The blocks one after another (see the module docstring)."""
    current_stride, rate = 1, 1
    for block in blocks:
        with tf.compat.v1.variable_scope(block.scope, "block", [net]) as sc:
            for i, unit in enumerate(block.args):
                if output_stride is not None and current_stride > output_stride:
                    raise ValueError("The target output_stride cannot be reached.")
                with tf.compat.v1.variable_scope(f"unit_{i + 1}", values=[net]):
                    if end_points is not None and "end_points" in inspect.signature(block.unit_fn).parameters:
                        unit = dict(unit, end_points=end_points)
                    if output_stride is not None and current_stride == output_stride:
                        net = block.unit_fn(net, rate=rate, **dict(unit, stride=1))
                        rate *= unit.get("stride", 1)
                    else:
                        net = block.unit_fn(net, rate=1, **unit)
                        current_stride *= unit.get("stride", 1)
            if end_points is not None:
                end_points[sc.name] = net
    if output_stride is not None and current_stride != output_stride:
        raise ValueError("The target output_stride cannot be reached.")
    return net


def resnet_arg_scope(weight_decay: float = 0.0001, batch_norm_decay: float = 0.997, batch_norm_epsilon: float = 1e-5,
                     batch_norm_scale: bool = True) -> dict:
    """slim's default ResNet arguments (see the module docstring), as a scope for ``arg_scope``."""
    params = {"decay": batch_norm_decay, "epsilon": batch_norm_epsilon, "scale": batch_norm_scale,
              "updates_collections": tf.compat.v1.GraphKeys.UPDATE_OPS}
    with arg_scope([conv2d], weights_regularizer=l2_regularizer(weight_decay),
                   weights_initializer=variance_scaling_initializer(), activation_fn=tf.nn.relu,
                   normalizer_fn=batch_norm, normalizer_params=params):
        with arg_scope([batch_norm], **params):
            with arg_scope([max_pool2d], padding="SAME") as scope:
                return scope
