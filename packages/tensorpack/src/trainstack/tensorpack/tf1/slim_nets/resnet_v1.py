"""slim's ResNet v1 (TF1's ``tf.contrib.slim.nets.resnet_v1``): ``resnet_v1_50``, ``_101``, ``_152``.

Built as TF1's, under its variable names, so that TF-slim's checkpoints (``resnet_v1_50.ckpt``) load
by name: ``resnet_v1_50/conv1/{weights,BatchNorm/{gamma,beta,moving_mean,moving_variance}}`` (a
7x7 ``conv2d_same`` of stride 2, then a 3x3 max pooling of stride 2, ``'SAME'`` under
``resnet_arg_scope``), blocks ``block1`` … ``block4`` of 3, 4, 6, 3 units (ResNet-50; 3, 4, 23, 3
for 101; 3, 8, 36, 3 for 152), each unit a ``bottleneck_v1`` of ``conv1`` (1x1), ``conv2`` (3x3,
``conv2d_same`` with the unit's stride), ``conv3`` (1x1, no activation) and a ``shortcut``
(a 1x1 convolution without activation where the depth changes, else the input subsampled),
``relu(shortcut + residual)``; the stride 2 on the *last* unit of blocks 1-3. Then the mean over
height and width (``pool5``, kept 4D) and ``logits``, a 1x1 convolution with biases, no batch norm
and no activation: the logits are ``[batch, 1, 1, num_classes]``, as contrib's were (it had no
``spatial_squeeze``). The end points are contrib's: each convolution, unit and block by its scope
name (``resnet_v1_50/block1/unit_1/bottleneck_v1/conv1``, ``resnet_v1_50/block1``, ...),
``resnet_v1_50/logits`` and ``predictions`` (the softmax).

``is_training`` goes to every ``batch_norm`` (moving averages when False). Other ResNet depths
(``resnet_v1_200``) and ``resnet_v2`` raise a :class:`TF1CallError` naming them.
"""
from __future__ import annotations

import collections
from typing import Any

import tensorflow as tf

from ..contrib_batch_norm import batch_norm
from ..contrib_layers import conv2d, max_pool2d
from ..slim_arg_scope import add_arg_scope, arg_scope
from ..switch import TF1CallError
from . import resnet_utils
from .resnet_utils import resnet_arg_scope

__all__ = ["resnet_arg_scope", "bottleneck", "resnet_v1", "resnet_v1_block", "resnet_v1_50", "resnet_v1_101",
           "resnet_v1_152", "resnet_utils"]


def _scope_name(scope: str) -> str:
    outer = tf.compat.v1.get_variable_scope().name
    return f"{outer}/{scope}" if outer else scope


def _conv(end_points: dict | None, inputs: tf.Tensor, *args: Any, scope: str, **kwargs: Any) -> tf.Tensor:
    out = conv2d(inputs, *args, scope=scope, **kwargs)
    if end_points is not None:
        end_points[_scope_name(scope)] = out
    return out


def _conv_same(end_points: dict | None, inputs: tf.Tensor, num_outputs: int, kernel_size: int, stride: int,
               rate: int = 1, *, scope: str) -> tf.Tensor:
    out = resnet_utils.conv2d_same(inputs, num_outputs, kernel_size, stride, rate=rate, scope=scope)
    if end_points is not None:
        end_points[_scope_name(scope)] = out
    return out


@add_arg_scope
def bottleneck(inputs: tf.Tensor, depth: int, depth_bottleneck: int, stride: int, rate: int = 1,
               outputs_collections: Any = None, scope: Any = None, end_points: dict | None = None) -> tf.Tensor:
    """A bottleneck residual unit with batch norm after each convolution (see the module docstring)."""
    with tf.compat.v1.variable_scope(scope, "bottleneck_v1", [inputs]) as sc:
        depth_in = inputs.shape[-1]
        if depth == depth_in:
            shortcut = resnet_utils.subsample(inputs, stride, "shortcut")
        else:
            shortcut = _conv(end_points, inputs, depth, [1, 1], stride=stride, activation_fn=None, scope="shortcut")
        residual = _conv(end_points, inputs, depth_bottleneck, [1, 1], stride=1, scope="conv1")
        residual = _conv_same(end_points, residual, depth_bottleneck, 3, stride, rate=rate, scope="conv2")
        residual = _conv(end_points, residual, depth, [1, 1], stride=1, activation_fn=None, scope="conv3")
        output = tf.nn.relu(shortcut + residual)
        if end_points is not None:
            end_points[sc.name] = output
        return output


def resnet_v1(inputs: tf.Tensor, blocks: list, num_classes: int | None = None, is_training: bool = True,
              global_pool: bool = True, output_stride: int | None = None, include_root_block: bool = True,
              reuse: Any = None, scope: Any = None) -> tuple[tf.Tensor, dict]:
    """A ResNet v1 of the given blocks: ``(net, end_points)`` (see the module docstring)."""
    end_points: dict = collections.OrderedDict()
    with tf.compat.v1.variable_scope(scope, "resnet_v1", [inputs], reuse=reuse):
        with arg_scope([batch_norm], is_training=is_training):
            net = inputs
            if include_root_block:
                if output_stride is not None:
                    if output_stride % 4 != 0:
                        raise ValueError("The output_stride needs to be a multiple of 4.")
                    output_stride //= 4
                net = _conv_same(end_points, net, 64, 7, stride=2, scope="conv1")
                net = max_pool2d(net, [3, 3], stride=2, scope="pool1")
            net = resnet_utils.stack_blocks_dense(net, blocks, output_stride, end_points=end_points)
            if global_pool:
                net = tf.reduce_mean(net, [1, 2], name="pool5", keepdims=True)
            if num_classes is not None:
                net = _conv(end_points, net, num_classes, [1, 1], activation_fn=None, normalizer_fn=None,
                            scope="logits")
                end_points["predictions"] = tf.nn.softmax(net, name="predictions")
            return net, end_points


def resnet_v1_block(scope: str, base_depth: int, num_units: int, stride: int) -> resnet_utils.Block:
    """A block of bottleneck units of depth ``4 base_depth``, the stride on its last unit."""
    unit = {"depth": base_depth * 4, "depth_bottleneck": base_depth, "stride": 1}
    return resnet_utils.Block(scope, bottleneck, [unit] * (num_units - 1) + [dict(unit, stride=stride)])


def _resnet(units: tuple[int, int, int, int], inputs: tf.Tensor, num_classes: int | None, is_training: bool,
            global_pool: bool, output_stride: int | None, reuse: Any, scope: str) -> tuple[tf.Tensor, dict]:
    blocks = [resnet_v1_block("block1", 64, units[0], 2), resnet_v1_block("block2", 128, units[1], 2),
              resnet_v1_block("block3", 256, units[2], 2), resnet_v1_block("block4", 512, units[3], 1)]
    return resnet_v1(inputs, blocks, num_classes, is_training, global_pool, output_stride, include_root_block=True,
                     reuse=reuse, scope=scope)


def resnet_v1_50(inputs: tf.Tensor, num_classes: int | None = None, is_training: bool = True, global_pool: bool = True,
                 output_stride: int | None = None, reuse: Any = None,
                 scope: str = "resnet_v1_50") -> tuple[tf.Tensor, dict]:
    """ResNet-50: blocks of 3, 4, 6 and 3 units."""
    return _resnet((3, 4, 6, 3), inputs, num_classes, is_training, global_pool, output_stride, reuse, scope)


def resnet_v1_101(inputs: tf.Tensor, num_classes: int | None = None, is_training: bool = True,
                  global_pool: bool = True, output_stride: int | None = None, reuse: Any = None,
                  scope: str = "resnet_v1_101") -> tuple[tf.Tensor, dict]:
    """ResNet-101: blocks of 3, 4, 23 and 3 units."""
    return _resnet((3, 4, 23, 3), inputs, num_classes, is_training, global_pool, output_stride, reuse, scope)


def resnet_v1_152(inputs: tf.Tensor, num_classes: int | None = None, is_training: bool = True,
                  global_pool: bool = True, output_stride: int | None = None, reuse: Any = None,
                  scope: str = "resnet_v1_152") -> tuple[tf.Tensor, dict]:
    """ResNet-152: blocks of 3, 8, 36 and 3 units."""
    return _resnet((3, 8, 36, 3), inputs, num_classes, is_training, global_pool, output_stride, reuse, scope)


def __getattr__(name: str) -> Any:
    if name.startswith("_"):
        raise AttributeError(name)
    raise TF1CallError(f"tf.contrib.slim.nets.resnet_v1.{name}: not provided by trainstack's resnet_v1 (which has "
                       f"{', '.join(__all__)}); build the network from resnet_v1() and resnet_v1_block(), or with "
                       "tensorpack's layer functions")
