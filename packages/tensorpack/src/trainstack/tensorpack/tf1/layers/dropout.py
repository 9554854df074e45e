"""tensorpack's ``Dropout``: drop in training towers, pass through in inference towers.

``Dropout(x, rate=0.3)`` drops with probability ``rate``; tensorpack's older forms
``Dropout(x, 0.7)`` and ``Dropout(x, keep_prob=0.7)`` give the probability to *keep* (a
positional number other than 0.5 is logged as a warning, as tensorpack did). Default rate 0.5.
The rate (or keep probability) may be a scalar tensor, e.g. cifar-convnet.py's
``Dropout(rate=tf.constant(0.5 if self.training else 0.0))``: a constant is used as its value, another
tensor is read in each step.
``training`` (or ``is_training``) defaults to the tower's ``is_training``. The kept values are
scaled by ``1 / (1 - rate)``. The masks come from TensorFlow's stateful random ops: a resumed
run draws fresh ones (use ``keras.layers.Dropout`` for checkpointed random state).
"""
from __future__ import annotations

import logging
from typing import Any

import tensorflow as tf

from .context import layer_label, tower_of
from .registry import layer_register

__all__ = ["Dropout"]

logger = logging.getLogger("trainstack.tensorpack")


def _static(value: Any) -> Any:
    """A Python number for a number or a constant tensor; the tensor itself when its value is computed."""
    if isinstance(value, (tf.Tensor, tf.Variable)):
        static = tf.get_static_value(value) if isinstance(value, tf.Tensor) else None
        return value if static is None else float(static)
    return value


def _rate(args: tuple, kwargs: dict[str, Any]) -> Any:
    label = layer_label("Dropout")
    if len(args) > 1:
        raise TypeError(f"{label} takes one positional argument after its input (the probability to keep)")
    given = [k for k in ("keep_prob", "rate") if k in kwargs] + (["positional keep_prob"] if args else [])
    if len(given) > 1:
        raise TypeError(f"{label}: {' and '.join(given)} both given; give one (rate= is the probability to drop)")
    if args:
        keep = _static(args[0])
        if not isinstance(keep, (tf.Tensor, tf.Variable)) and keep != 0.5:
            logger.warning("The first positional argument to Dropout is the probability to keep, not to drop "
                           "(tensorpack's convention); use rate= to give the probability to drop.")
        return 1.0 - keep
    if "keep_prob" in kwargs:
        return 1.0 - _static(kwargs.pop("keep_prob"))
    return _static(kwargs.pop("rate", 0.5))


@layer_register(use_scope=None)
def Dropout(x: tf.Tensor, *args: Any, **kwargs: Any) -> tf.Tensor:  # noqa: N802
    """Dropout by tensorpack's arguments (see the module docstring); ``noise_shape``, ``seed`` and
    ``name`` as ``tf.nn.dropout``'s."""
    kwargs = dict(kwargs)
    if "is_training" in kwargs:
        kwargs["training"] = kwargs.pop("is_training")
    rate = _rate(args, kwargs)
    training = kwargs.pop("training", None)
    if training is None:
        training = tower_of("Dropout").is_training
    extra = set(kwargs) - {"noise_shape", "seed", "name"}
    if extra:
        raise TypeError(f"{layer_label('Dropout')}: unexpected arguments {sorted(extra)}; it takes rate, keep_prob, "
                        "training (is_training), noise_shape, seed and name")
    training = _static(training)
    if isinstance(training, (tf.Tensor, tf.Variable)):
        raise TypeError(f"{layer_label('Dropout')}: training must be a Python bool (or a constant), got the computed "
                        f"tensor {training!r}; the tower's is_training is the default")
    if not training or (not isinstance(rate, (tf.Tensor, tf.Variable)) and rate == 0):
        return tf.identity(x, name=kwargs.get("name"))
    return tf.nn.dropout(x, rate=rate, noise_shape=kwargs.get("noise_shape"), seed=kwargs.get("seed"),
                         name=kwargs.get("name"))
