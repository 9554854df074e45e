"""TF1's ``tf.contrib.layers.batch_norm`` (``slim.batch_norm``), which TensorFlow 2 does not have.

slim's ResNets (``slim_nets/resnet_v1.py``) normalize every convolution with it, through
``resnet_arg_scope()``'s ``normalizer_fn``. TF1's signature and defaults (``decay`` 0.999, ``center``
True, ``scale`` False, ``epsilon`` 0.001, ``is_training`` True; ``resnet_arg_scope`` gives 0.997,
1e-5 and scale True), its variables under ``variable_scope(scope or 'BatchNorm')``: ``beta``
(zeros, if ``center``), ``gamma`` (ones, if ``scale``), ``moving_mean`` (zeros) and
``moving_variance`` (ones), the last two not trainable; ``param_initializers`` by those names.

- ``is_training=False``: ``gamma * (x - moving_mean) / sqrt(moving_variance + epsilon) + beta``;
- ``is_training=True``: the batch's statistics; the moving averages ``m = m - (m - stat) * (1 -
  decay)`` are updated in the training step by the main training tower, where tensorpack's
  ``RunUpdateOps`` ran TF1's ``UPDATE_OPS`` (``updates_collections`` that key, or None: TF1's
  in-place update);
- 4D inputs go through TensorFlow's fused kernel as TF1's ``fused=None`` did (its epsilon at least
  1.001e-5, as TF1's ``fused_batch_norm``; the variance it averages is the batch's unbiased one),
  others through ``tf.nn.moments``.

What lives in TF1's other collections or is not written here (``variables_collections``,
``outputs_collections``, another ``updates_collections``, ``param_regularizers``, ``batch_weights``,
``renorm``, ``zero_debias_moving_mean``, ``adjustment``) raises a :class:`TF1CallError`.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tensorflow as tf

from .layers.context import get_variable, tower_of
from .slim_arg_scope import add_arg_scope
from .switch import TF1CallError, current

__all__ = ["batch_norm"]

_CALL = "tf.contrib.layers.batch_norm"
_UPDATE_OPS = tf.compat.v1.GraphKeys.UPDATE_OPS


def _refuse(**arguments: Any) -> None:
    for name, value in arguments.items():
        if value not in (None, False):
            raise TF1CallError(f"{_CALL}({name}=...): not supported by trainstack's slim.batch_norm "
                               "(tfv1.contrib); use tensorpack's BatchNorm/BatchRenorm layer functions or "
                               "keras.layers.BatchNormalization")


def _default_scope(scope: Any) -> Any:
    """``scope``, or TF1's default name ``BatchNorm``, ``BatchNorm_1``, ... in call order within one build of
    the tower (the count ``contrib_layers`` keeps for its default names, in the same frame)."""
    if scope is not None:
        return scope
    frame = current()
    assert frame is not None  # tower_of() checked it
    counts = frame.scratch.setdefault("contrib.layers names", {})
    key = (tf.compat.v1.get_variable_scope().name, "BatchNorm")
    count = counts[key] = counts.get(key, -1) + 1
    return "BatchNorm" if count == 0 else f"BatchNorm_{count}"


def _update(variable: Any, value: tf.Tensor, decay: float) -> Any:
    value = tf.cast(value, variable.dtype)
    return variable.assign_sub((variable - value) * (1.0 - decay), read_value=False)


@add_arg_scope
def batch_norm(inputs: tf.Tensor, decay: float = 0.999, center: bool = True, scale: bool = False,
               epsilon: float = 0.001, activation_fn: Callable | None = None, param_initializers: dict | None = None,
               param_regularizers: dict | None = None, updates_collections: Any = _UPDATE_OPS,
               is_training: Any = True, reuse: Any = None, variables_collections: Any = None,
               outputs_collections: Any = None, trainable: bool = True, batch_weights: Any = None,
               fused: Any = None, data_format: str = "NHWC", zero_debias_moving_mean: bool = False,
               scope: Any = None, renorm: bool = False, renorm_clipping: Any = None, renorm_decay: float = 0.99,
               adjustment: Any = None) -> tf.Tensor:
    """TF1's ``slim.batch_norm`` (see the module docstring)."""
    _refuse(param_regularizers=param_regularizers, variables_collections=variables_collections,
            outputs_collections=outputs_collections, batch_weights=batch_weights, renorm=renorm,
            zero_debias_moving_mean=zero_debias_moving_mean, adjustment=adjustment)
    if updates_collections not in (None, _UPDATE_OPS):
        raise TF1CallError(f"{_CALL}(updates_collections={updates_collections!r}): only UPDATE_OPS (the "
                           "training step updates the moving averages) or None are supported")
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError(f"{_CALL}: data_format must be 'NHWC' or 'NCHW', got {data_format!r}")
    tower = tower_of(_CALL)
    if isinstance(is_training, (tf.Tensor, tf.Variable)):
        raise TF1CallError(f"{_CALL}(is_training=<tensor>): give a Python bool (the tower's is_training)")
    training = bool(is_training)
    init = dict(param_initializers or {})
    with tf.compat.v1.variable_scope(_default_scope(scope), reuse=reuse):
        rank = inputs.shape.rank
        axis = 1 if data_format == "NCHW" and rank == 4 else -1
        channels = inputs.shape[axis]
        if channels is None:
            raise ValueError(f"{_CALL}: the channel dimension must be known, got shape {inputs.shape}")
        dtype = inputs.dtype.base_dtype
        beta = get_variable(_CALL, "beta", [channels], init.get("beta", tf.compat.v1.zeros_initializer()),
                            dtype=dtype, trainable=trainable) if center else None
        gamma = get_variable(_CALL, "gamma", [channels], init.get("gamma", tf.compat.v1.ones_initializer()),
                             dtype=dtype, trainable=trainable) if scale else None
        moving_mean = get_variable(_CALL, "moving_mean", [channels],
                                   init.get("moving_mean", tf.compat.v1.zeros_initializer()), dtype=dtype,
                                   trainable=False)
        moving_variance = get_variable(_CALL, "moving_variance", [channels],
                                       init.get("moving_variance", tf.compat.v1.ones_initializer()), dtype=dtype,
                                       trainable=False)
        gamma_t = gamma if gamma is not None else tf.ones([channels], dtype)
        beta_t = beta if beta is not None else tf.zeros([channels], dtype)
        use_fused = rank == 4 and fused is not False
        if use_fused:
            if training:
                out, mean, variance = tf.compat.v1.nn.fused_batch_norm(
                    inputs, gamma_t, beta_t, epsilon=epsilon, data_format=data_format, is_training=True)
            else:
                out, _, _ = tf.compat.v1.nn.fused_batch_norm(
                    inputs, gamma_t, beta_t, mean=moving_mean, variance=moving_variance, epsilon=epsilon,
                    data_format=data_format, is_training=False)
        else:
            if fused:
                raise ValueError(f"{_CALL}(fused=True) takes 4D inputs, got shape {inputs.shape}")
            if rank == 4 and data_format == "NCHW":
                shape = [1, channels, 1, 1]
                gamma_t, beta_t = tf.reshape(gamma_t, shape), tf.reshape(beta_t, shape)
            if training:
                axes = [i for i in range(rank) if i != (axis % rank)]
                mean, variance = tf.nn.moments(inputs, axes, keepdims=rank == 4 and data_format == "NCHW")
                out = tf.nn.batch_normalization(inputs, mean, variance, beta_t, gamma_t, epsilon)
            else:
                mm, mv = moving_mean, moving_variance
                if rank == 4 and data_format == "NCHW":
                    mm, mv = tf.reshape(mm, [1, channels, 1, 1]), tf.reshape(mv, [1, channels, 1, 1])
                out = tf.nn.batch_normalization(inputs, mm, mv, beta_t, gamma_t, epsilon)
        if training and tower.is_main_training_tower:
            with tf.control_dependencies([_update(moving_mean, tf.reshape(mean, [-1]), decay),
                                          _update(moving_variance, tf.reshape(variance, [-1]), decay)]):
                out = tf.identity(out)
        return activation_fn(out) if activation_fn is not None else out
