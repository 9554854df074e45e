"""TF1's ``tf.contrib.layers`` (and ``slim.layers``, the same functions), which TensorFlow 2 does not have.

tensorpack's ``SimilarityLearning/mnist-embeddings.py`` builds its network with
``slim.layers.conv2d``, ``max_pool2d``, ``flatten`` and ``fully_connected``. These are TF1's, with
its signatures, defaults and variable names, built as ``tfv1.layers`` is (``layers/tf_layers.py``:
under ``variable_scope(scope)`` with the room's ``get_variable``, in a tower function only):

- ``conv2d(inputs, num_outputs, kernel_size, stride=1, padding='SAME', rate=1,
  activation_fn=relu)``: ``activation_fn(conv(inputs, weights) + biases)``, variables
  ``<scope>/weights`` ``[kh, kw, in, num_outputs]`` and ``<scope>/biases``; default scope ``Conv``;
- ``fully_connected(inputs, num_outputs, activation_fn=relu)``: ``activation_fn(inputs @ weights +
  biases)`` over the last axis, ``<scope>/weights`` ``[in, num_outputs]``; default scope
  ``fully_connected``;
- weights by ``xavier_initializer()`` (Glorot uniform), biases zeros; ``normalizer_fn`` (then no
  biases, as TF1) is called as ``normalizer_fn(outputs, **normalizer_params)``;
- ``max_pool2d`` / ``avg_pool2d(inputs, kernel_size, stride=2, padding='VALID')``, ``flatten``
  (``[batch, -1]``); the initializers ``xavier_initializer``, ``variance_scaling_initializer``
  (contrib's formula: ``factor / n``, truncated normal of stddev ``sqrt(1.3 factor / n)`` or
  uniform of limit ``sqrt(3 factor / n)``) and the regularizers ``l1_regularizer``, ``l2_regularizer``
  (tensorpack's, which are contrib's).

A default scope name counts as TF1's (``Conv``, ``Conv_1``, ... in call order within one build of
the tower). Each function is decorated with ``add_arg_scope`` (``slim.arg_scope``,
``slim_arg_scope.py``). ``weights_regularizer`` / ``biases_regularizer`` put their loss in the
``REGULARIZATION_LOSSES`` collection of the graph being traced, as TF1's did in its graph, so that
``tf.compat.v1.losses.get_regularization_losses()`` in the same ``build_graph`` sums them (one tower's).
TF1's other ``tf.contrib.layers`` names and the arguments whose effect lives in TF1's other collections
(``variables_collections``, ``outputs_collections``) raise a :class:`TF1CallError` naming what to use instead.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import tensorflow as tf

from .layers.args import shape2d
from .layers.context import get_variable, tower_of
from .regularize import l1_regularizer, l2_regularizer
from .slim_arg_scope import add_arg_scope
from .switch import TF1CallError, current

__all__ = ["conv2d", "fully_connected", "max_pool2d", "avg_pool2d", "flatten", "xavier_initializer",
           "xavier_initializer_conv2d", "variance_scaling_initializer", "l1_regularizer", "l2_regularizer"]

_LAYERS = "tf.contrib.layers"
#: TF1's default ``biases_initializer`` (``None`` there means: no biases)
_ZEROS = tf.compat.v1.zeros_initializer()


def refuse_name(namespace: str, name: str) -> TF1CallError:
    """The error for a ``tf.contrib.layers`` / ``slim`` name trainstack does not provide."""
    return TF1CallError(f"{namespace}.{name}: not provided by trainstack's tfv1.contrib (which has {', '.join(__all__)}"
                        ", batch_norm; slim also arg_scope, add_arg_scope, nets.resnet_v1"
                        "); write it with TensorFlow 2 ops in build_graph, or use tensorpack's layer functions "
                        "(from trainstack.tensorpack import *) or Keras 3 layers")


def _refuse_arguments(call: str, **arguments: Any) -> None:
    given = [name for name, value in arguments.items() if value is not None]
    if given:
        raise TF1CallError(f"{_LAYERS}.{call}({given[0]}=...): TF1's variables and outputs collections do not "
                           "exist in TensorFlow 2; keep the tensors and variables the function returns (its "
                           "variables are the model's, by name: regularize_cost('<scope>/weights', ...)) instead")


def _regularize(regularizer: Callable | None, variable: Any) -> None:
    """TF1's ``weights_regularizer=``: its loss in the ``REGULARIZATION_LOSSES`` collection of the graph
    being traced, where ``tf.compat.v1.losses.get_regularization_losses()`` in the same ``build_graph``
    finds it."""
    if regularizer is not None:
        loss = regularizer(variable)
        if loss is not None:
            tf.compat.v1.add_to_collection(tf.compat.v1.GraphKeys.REGULARIZATION_LOSSES, loss)


def _fans(shape: list[int]) -> tuple[float, float]:
    """contrib's fans: the last two axes, times the receptive field of a convolution's kernel."""
    if not shape:
        return 1.0, 1.0
    fan_in = float(shape[-2]) if len(shape) > 1 else float(shape[-1])
    fan_out = float(shape[-1])
    for dim in shape[:-2]:
        fan_in *= dim
        fan_out *= dim
    return fan_in, fan_out


class _VarianceScaling:
    """contrib's ``variance_scaling_initializer`` (see the module docstring)."""

    def __init__(self, factor: float, mode: str, uniform: bool, seed: Any, dtype: Any) -> None:
        if mode not in ("FAN_IN", "FAN_OUT", "FAN_AVG"):
            raise TypeError(f"variance_scaling_initializer: unknown mode {mode!r} (FAN_IN, FAN_OUT or FAN_AVG)")
        self.factor, self.mode, self.uniform, self.seed = float(factor), mode, bool(uniform), seed
        self.dtype = tf.as_dtype(dtype)

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> tf.Tensor:
        dtype = tf.as_dtype(dtype or self.dtype)
        fan_in, fan_out = _fans([int(d) for d in shape])
        n = {"FAN_IN": fan_in, "FAN_OUT": fan_out, "FAN_AVG": (fan_in + fan_out) / 2.0}[self.mode]
        if self.uniform:
            limit = math.sqrt(3.0 * self.factor / n)
            return tf.random.uniform(shape, -limit, limit, dtype, seed=self.seed)
        return tf.random.truncated_normal(shape, 0.0, math.sqrt(1.3 * self.factor / n), dtype, seed=self.seed)


def variance_scaling_initializer(factor: float = 2.0, mode: str = "FAN_IN", uniform: bool = False, seed: Any = None,
                                 dtype: Any = tf.float32) -> _VarianceScaling:
    """TF1's ``tf.contrib.layers.variance_scaling_initializer`` (He's by default)."""
    return _VarianceScaling(factor, mode, uniform, seed, dtype)


def xavier_initializer(uniform: bool = True, seed: Any = None, dtype: Any = tf.float32) -> _VarianceScaling:
    """TF1's ``xavier_initializer``: ``variance_scaling_initializer(1.0, 'FAN_AVG', uniform)``."""
    return _VarianceScaling(1.0, "FAN_AVG", uniform, seed, dtype)


xavier_initializer_conv2d = xavier_initializer


def _scope(call: str, scope: Any, default: str, reuse: Any) -> Any:
    """``variable_scope(scope)``, or TF1's default name: ``default``, ``default_1``, ... in one build."""
    tower_of(f"{_LAYERS}.{call}")
    if scope is None:
        frame = current()
        assert frame is not None  # tower_of() checked it
        counts = frame.scratch.setdefault("contrib.layers names", {})
        key = (tf.compat.v1.get_variable_scope().name, default)
        count = counts[key] = counts.get(key, -1) + 1
        scope = default if count == 0 else f"{default}_{count}"
    return tf.compat.v1.variable_scope(scope, reuse=reuse)


def _finish(call: str, out: tf.Tensor, units: int, dtype: Any, fmt: str, activation_fn: Callable | None,
            normalizer_fn: Callable | None, normalizer_params: dict | None, biases_initializer: Any,
            trainable: bool, biases_regularizer: Callable | None = None) -> tf.Tensor:
    if normalizer_fn is not None:
        out = normalizer_fn(out, **(normalizer_params or {}))
    elif biases_initializer is not None:
        biases = get_variable(f"{_LAYERS}.{call}", "biases", [units], biases_initializer, dtype=dtype,
                              trainable=trainable)
        _regularize(biases_regularizer, biases)
        out = tf.nn.bias_add(out, biases, data_format=fmt)
    return activation_fn(out) if activation_fn is not None else out


@add_arg_scope
def conv2d(inputs: tf.Tensor, num_outputs: int, kernel_size: Any, stride: Any = 1, padding: str = "SAME",
           data_format: Any = None, rate: Any = 1, activation_fn: Callable | None = tf.nn.relu,
           normalizer_fn: Callable | None = None, normalizer_params: dict | None = None,
           weights_initializer: Any = None, weights_regularizer: Any = None,
           biases_initializer: Any = _ZEROS, biases_regularizer: Any = None,
           reuse: Any = None, variables_collections: Any = None, outputs_collections: Any = None,
           trainable: bool = True, scope: Any = None) -> tf.Tensor:
    """TF1's ``tf.contrib.layers.conv2d`` (``slim.conv2d``), 2D inputs only (see the module docstring)."""
    _refuse_arguments("conv2d", variables_collections=variables_collections, outputs_collections=outputs_collections)
    fmt = data_format or "NHWC"
    if fmt not in ("NHWC", "NCHW"):
        raise ValueError(f"{_LAYERS}.conv2d: data_format must be 'NHWC' or 'NCHW', got {data_format!r}")
    with _scope("conv2d", scope, "Conv", reuse):
        if inputs.shape.rank != 4:
            raise TF1CallError(f"{_LAYERS}.conv2d: trainstack's takes 4D inputs only (TF1 chose conv1d/conv3d by "
                               f"rank), got shape {inputs.shape}; use tf.nn.convolution")
        channels = int(inputs.shape[3 if fmt == "NHWC" else 1])
        size = shape2d(kernel_size, "kernel_size", f"{_LAYERS}.conv2d")
        weights = get_variable(f"{_LAYERS}.conv2d", "weights", size + [channels, num_outputs],
                               weights_initializer or xavier_initializer(), dtype=inputs.dtype, trainable=trainable)
        _regularize(weights_regularizer, weights)
        step, dilation = shape2d(stride, "stride", "conv2d"), shape2d(rate, "rate", "conv2d")
        spatial = (lambda v: [1, *v, 1]) if fmt == "NHWC" else (lambda v: [1, 1, *v])
        out = tf.nn.conv2d(inputs, weights, spatial(step), padding.upper(), data_format=fmt,
                           dilations=spatial(dilation))
        return _finish("conv2d", out, num_outputs, inputs.dtype, fmt, activation_fn, normalizer_fn,
                       normalizer_params, biases_initializer, trainable, biases_regularizer)


@add_arg_scope
def fully_connected(inputs: tf.Tensor, num_outputs: int, activation_fn: Callable | None = tf.nn.relu,
                    normalizer_fn: Callable | None = None, normalizer_params: dict | None = None,
                    weights_initializer: Any = None, weights_regularizer: Any = None,
                    biases_initializer: Any = _ZEROS, biases_regularizer: Any = None,
                    reuse: Any = None, variables_collections: Any = None, outputs_collections: Any = None,
                    trainable: bool = True, scope: Any = None) -> tf.Tensor:
    """TF1's ``tf.contrib.layers.fully_connected`` (``slim.fully_connected``; see the module docstring)."""
    _refuse_arguments("fully_connected", variables_collections=variables_collections,
                      outputs_collections=outputs_collections)
    with _scope("fully_connected", scope, "fully_connected", reuse):
        if inputs.shape.rank is None or inputs.shape[-1] is None:
            raise ValueError(f"{_LAYERS}.fully_connected: the input's last dimension must be known, got "
                             f"{inputs.shape}")
        weights = get_variable(f"{_LAYERS}.fully_connected", "weights", [int(inputs.shape[-1]), num_outputs],
                               weights_initializer or xavier_initializer(), dtype=inputs.dtype, trainable=trainable)
        _regularize(weights_regularizer, weights)
        if inputs.shape.rank == 2:
            out = tf.matmul(inputs, weights)
        else:
            out = tf.tensordot(inputs, weights, [[inputs.shape.rank - 1], [0]])
            out.set_shape(inputs.shape[:-1].concatenate([num_outputs]))
        return _finish("fully_connected", out, num_outputs, inputs.dtype, "NHWC", activation_fn, normalizer_fn,
                       normalizer_params, biases_initializer, trainable, biases_regularizer)


def _pool(op: Any, call: str, inputs: tf.Tensor, kernel_size: Any, stride: Any, padding: str, data_format: str,
          outputs_collections: Any, scope: Any) -> tf.Tensor:
    _refuse_arguments(call, outputs_collections=outputs_collections)
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError(f"{_LAYERS}.{call}: data_format must be 'NHWC' or 'NCHW', got {data_format!r}")
    with tf.name_scope(scope or ("MaxPool2D" if call == "max_pool2d" else "AvgPool2D")):
        return op(inputs, shape2d(kernel_size, "kernel_size", call), shape2d(stride, "stride", call),
                  padding.upper(), data_format=data_format)


@add_arg_scope
def max_pool2d(inputs: tf.Tensor, kernel_size: Any, stride: Any = 2, padding: str = "VALID",
               data_format: str = "NHWC", outputs_collections: Any = None, scope: Any = None) -> tf.Tensor:
    """TF1's ``tf.contrib.layers.max_pool2d`` (``slim.max_pool2d``): no variables."""
    return _pool(tf.nn.max_pool2d, "max_pool2d", inputs, kernel_size, stride, padding, data_format,
                 outputs_collections, scope)


@add_arg_scope
def avg_pool2d(inputs: tf.Tensor, kernel_size: Any, stride: Any = 2, padding: str = "VALID",
               data_format: str = "NHWC", outputs_collections: Any = None, scope: Any = None) -> tf.Tensor:
    """TF1's ``tf.contrib.layers.avg_pool2d`` (``slim.avg_pool2d``): no variables."""
    return _pool(tf.nn.avg_pool2d, "avg_pool2d", inputs, kernel_size, stride, padding, data_format,
                 outputs_collections, scope)


@add_arg_scope
def flatten(inputs: tf.Tensor, outputs_collections: Any = None, scope: Any = None) -> tf.Tensor:
    """TF1's ``tf.contrib.layers.flatten``: ``[batch, -1]`` in the input's order."""
    _refuse_arguments("flatten", outputs_collections=outputs_collections)
    with tf.name_scope(scope or "Flatten"):
        rest = inputs.shape.as_list()[1:]
        if None not in rest:
            return tf.reshape(inputs, [-1, math.prod(rest)])
        return tf.reshape(inputs, tf.stack([tf.shape(inputs)[0], -1]))
