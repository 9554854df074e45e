"""tensorpack's regularization: ``regularize_cost``, ``l2_regularizer``, ``l1_regularizer``.

A regularization cost over the model's trainable variables whose names match a
regex, called inside ``build_graph`` (tensorpack's ``models/regularize.py``).
Variable names are those the tower function gives its variables, without the
tower's name scope and ``:0``: tensorpack's layer functions and ``get_variable``
under variable scopes give tensorpack's (``conv1/W``), so a ported script's
regexes stay as they were; Keras layers give theirs (``conv1/kernel``).
"""
from __future__ import annotations

import logging
import re
import weakref
from collections.abc import Callable
from typing import Any

import tensorflow as tf

from trainstack.towers import TowerFunc

from .switch import current
from .trainable import trainable_of, variable_name

__all__ = ["regularize_cost", "l2_regularizer", "l1_regularizer"]

logger = logging.getLogger("trainstack.tensorpack")


# -- regularization -------------------------------------------------------------------------------
_logged: weakref.WeakKeyDictionary[TowerFunc, set] = weakref.WeakKeyDictionary()


@tf.autograph.experimental.do_not_convert
def regularize_cost(regex: str, func: Callable[[Any], Any], name: str = "regularize_cost") -> tf.Tensor:
    """The sum of ``func(v)`` over the model's trainable variables ``v`` whose name matches ``regex``
    (``re.search``), as a float32 scalar to add to the cost::

        def build_graph(self, image, label):
            ...
            wd_cost = regularize_cost("conv.*/kernel", l2_regularizer(1e-4))
            return tf.add_n([cost, wd_cost], name="total_cost")

    Call it inside ``build_graph`` after the layers have been called (Keras creates a layer's
    variables on its first call). In an inference tower it returns 0, as tensorpack's did.
    The matched variables are logged once per model and regex.
    """
    if not isinstance(regex, str) or not regex:
        raise ValueError(f"regularize_cost(regex=...) needs a non-empty regex string, got {regex!r}")
    frame = current()
    if frame is None or frame.tower is None:
        raise RuntimeError("regularize_cost() must be called inside the tower function "
                           "(ModelDesc.build_graph), under the trainer's TowerContext")
    if not frame.tower.is_training:
        return tf.constant(0.0, tf.float32, name="empty_" + name)
    tower_func = frame.tower_func
    pattern = re.compile(regex)
    costs, names = [], []
    with tf.name_scope(name + "_internals"):
        for v in trainable_of(tower_func):
            vname = variable_name(v)
            if not pattern.search(vname):
                continue
            loss = tf.convert_to_tensor(func(v))
            if not loss.dtype.is_floating:
                raise TypeError(f"regularize_cost(): the regularizer returned {loss.dtype.name} for variable "
                                f"{vname!r}; it must return a floating-point scalar")
            costs.append(tf.cast(loss, tf.float32))
            names.append(vname)
    seen = _logged.setdefault(tower_func, set())
    if regex not in seen:
        seen.add(regex)
        logger.info("regularize_cost() found %d variables to regularize.", len(names))
        if names:
            logger.info("The following variables will be regularized: %s", ", ".join(names))
    if not costs:
        return tf.constant(0.0, tf.float32, name="empty_" + name)
    return tf.add_n(costs, name=name)


def l2_regularizer(scale: float) -> Callable[[Any], tf.Tensor]:
    """``v -> scale * sum(v ** 2) / 2`` (``scale * tf.nn.l2_loss(v)``), tensorpack's (and TF1
    contrib's) L2 regularizer. Note the ``/ 2``: ``keras.regularizers.L2(scale)`` has none."""
    scale = float(scale)
    return lambda v: scale * tf.nn.l2_loss(v)


def l1_regularizer(scale: float) -> Callable[[Any], tf.Tensor]:
    """``v -> scale * sum(|v|)``, tensorpack's L1 regularizer."""
    scale = float(scale)
    return lambda v: scale * tf.reduce_sum(tf.abs(v))
