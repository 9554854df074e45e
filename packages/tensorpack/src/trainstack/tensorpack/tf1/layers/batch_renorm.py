"""tensorpack's ``BatchRenorm``: Batch Renormalization (Ioffe 2017, arXiv:1702.03275).

tensorpack 0.11 wrapped TF1's ``tf.layers.BatchNormalization(renorm=True, fused=False)``, which
Keras 3 no longer has; this is that layer's computation, written out, with its variable names
and its order of updates:

- variables ``gamma`` (ones, or ``gamma_initializer``), ``beta`` (zeros), ``moving_mean`` (zeros),
  ``moving_variance`` (ones), and, not trainable and starting at 0, ``renorm_mean``,
  ``renorm_mean_weight``, ``renorm_stddev``, ``renorm_stddev_weight`` (the renorm averages are kept
  unbiased by dividing by their weight, TF1's way);
- in a training tower, with the batch's (biased) ``mean`` and ``stddev = sqrt(var + epsilon)``
  and the averages read before this step's update, ``r = stddev / s``, ``d = (mean - m) / s``
  where ``m = renorm_mean + (1 - renorm_mean_weight) * mean`` and ``s = renorm_stddev +
  (1 - renorm_stddev_weight) * stddev``; ``r`` clipped to ``[1/rmax, rmax]``, ``d`` to
  ``[-dmax, dmax]``, neither differentiated; the output is ``((x - mean) / stddev * r + d) *
  gamma + beta``;
- the main training tower then updates, inside the step (tensorpack ran the layer's
  ``UPDATE_OPS`` with each step, from the main tower only): the renorm averages and weights with
  momentum 0.99 (``a -= (a - value) * 0.01``, the weights towards 1), then ``moving_mean`` towards
  ``renorm_mean / renorm_mean_weight`` and ``moving_variance`` towards
  ``(renorm_stddev / renorm_stddev_weight)^2 - epsilon`` with ``momentum`` (0.9);
- inference towers normalize by ``moving_mean`` and ``moving_variance``.

``training`` is the tower's (tensorpack's ``BatchRenorm`` has no argument for it). ``rmax`` and
``dmax`` are floats or scalar tensors (a schedule), given by keyword as tensorpack required. A 2D
input is normalized per column (tensorpack 0.11's own 2D branch squeezed a 2D output and failed).
"""
from __future__ import annotations

from typing import Any

import tensorflow as tf

from .args import layout, tflayer_args
from .context import get_variable, layer_label, tower_of
from .registry import attach_variables, layer_register

__all__ = ["BatchRenorm"]

#: TF1's ``renorm_momentum`` (tensorpack left it at the default)
RENORM_MOMENTUM = 0.99


def _average(variable: Any, value: tf.Tensor, momentum: float) -> Any:
    """TF1's ``_assign_moving_average``: ``variable -= (variable - value) * (1 - momentum)``; the new value."""
    return variable.assign_sub((variable - tf.cast(value, variable.dtype)) * (1.0 - momentum))


@layer_register()
@tflayer_args(args_names=[], name_mapping={"use_bias": "center", "use_scale": "scale",
                                            "gamma_init": "gamma_initializer", "decay": "momentum"})
def BatchRenorm(x: tf.Tensor, rmax: Any, dmax: Any, *, momentum: float = 0.9,  # noqa: N802
                epsilon: float = 1e-5, center: bool = True, scale: bool = True, gamma_initializer: Any = None,
                data_format: str = "channels_last") -> tf.Tensor:
    """Batch Renormalization, ``BatchRenorm('brn', x, rmax=3.0, dmax=5.0)`` (see the module docstring)."""
    tower = tower_of("BatchRenorm")
    label = layer_label("BatchRenorm")
    shape = x.shape.as_list()
    if len(shape) not in (2, 4):
        raise ValueError(f"{label} takes a 2D (NC) or 4D input, got shape {x.shape}")
    axis = 1 if len(shape) == 2 or layout(data_format, "BatchRenorm") == "NCHW" else 3
    channels = shape[axis]
    if channels is None:
        raise ValueError(f"{label}: the channel dimension must be known, got shape {x.shape}")
    reduce = [a for a in range(len(shape)) if a != axis]
    broadcast = [1] * len(shape)
    broadcast[axis] = channels

    zeros, ones = tf.compat.v1.zeros_initializer(), tf.compat.v1.ones_initializer()
    gamma = get_variable("BatchRenorm", "gamma", [channels], gamma_initializer or ones) if scale else None
    beta = get_variable("BatchRenorm", "beta", [channels], zeros) if center else None
    stats = {name: get_variable("BatchRenorm", name, shape_, init, trainable=False)
             for name, shape_, init in (("moving_mean", [channels], zeros), ("moving_variance", [channels], ones),
                                        ("renorm_mean", [channels], zeros), ("renorm_mean_weight", [], zeros),
                                        ("renorm_stddev", [channels], zeros), ("renorm_stddev_weight", [], zeros))}
    gamma_t = tf.ones([channels], x.dtype) if gamma is None else tf.cast(gamma, x.dtype)
    beta_t = tf.zeros([channels], x.dtype) if beta is None else tf.cast(beta, x.dtype)

    if not tower.is_training:
        out = tf.nn.batch_normalization(x, tf.reshape(stats["moving_mean"], broadcast),
                                        tf.reshape(stats["moving_variance"], broadcast),
                                        tf.reshape(beta_t, broadcast), tf.reshape(gamma_t, broadcast), epsilon)
        return attach_variables(tf.identity(out, name="output"), gamma=gamma, beta=beta)

    mean, variance = tf.nn.moments(x, reduce)
    stddev = tf.sqrt(variance + epsilon)
    # the corrections read the averages as they were before this step's update
    mixed_mean = stats["renorm_mean"].read_value() + (1.0 - stats["renorm_mean_weight"].read_value()) * mean
    mixed_stddev = stats["renorm_stddev"].read_value() + (1.0 - stats["renorm_stddev_weight"].read_value()) * stddev
    rmax = tf.cast(rmax, x.dtype)
    dmax = tf.cast(dmax, x.dtype)
    r = tf.stop_gradient(tf.clip_by_value(stddev / mixed_stddev, 1.0 / rmax, rmax), name="renorm_r")
    d = tf.stop_gradient(tf.clip_by_value((mean - mixed_mean) / mixed_stddev, -dmax, dmax), name="renorm_d")
    out = tf.nn.batch_normalization(x, tf.reshape(mean, broadcast), tf.reshape(variance, broadcast),
                                    tf.reshape(d * gamma_t + beta_t, broadcast), tf.reshape(r * gamma_t, broadcast),
                                    epsilon)
    if tower.is_main_training_tower:
        with tf.control_dependencies([r, d]):
            new_mean = (_average(stats["renorm_mean"], mean, RENORM_MOMENTUM)
                        / _average(stats["renorm_mean_weight"], 1.0, RENORM_MOMENTUM))
            new_stddev = (_average(stats["renorm_stddev"], stddev, RENORM_MOMENTUM)
                          / _average(stats["renorm_stddev_weight"], 1.0, RENORM_MOMENTUM))
        updates = [_average(stats["moving_mean"], new_mean, momentum),
                   _average(stats["moving_variance"], tf.square(new_stddev) - epsilon, momentum)]
        with tf.control_dependencies(updates):
            out = tf.identity(out, name="output")
    else:
        out = tf.identity(out, name="output")
    return attach_variables(out, gamma=gamma, beta=beta)
