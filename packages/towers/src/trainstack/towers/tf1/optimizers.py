"""TF1 optimizers: tensorpack's ``opt.minimize(loss, var_list=..., name=...)`` and its ordering.

Keras 3 optimizers have no ``minimize``. Inside the switch (a tower's trace, or
the ``__init__`` of a trainer that builds its graph tensorpack's way) Keras
optimizers and ``apply_grad_processors`` wrappers get tensorpack's, which is
:func:`~.recording.minimize`; ``tf.control_dependencies([op])`` around later
``minimize`` calls orders them as TF1 did (see :mod:`.recording`). Elsewhere
``opt.minimize`` does not exist, as in Keras 3.

TF1 optimizers (``tf.compat.v1.train.AdamOptimizer``, ...) have a ``minimize`` of their own
(TF1's, which builds a TF1 graph): inside the switch it is replaced by the same
:func:`~.recording.minimize` (with TF1's signature, ``minimize(loss, global_step=None,
var_list=None, ..., name=None)``), which trains the Keras optimizer that stands for the TF1
one (:mod:`.train_optimizers`); elsewhere it is TensorFlow's own.
"""
from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf

from ..tower.gradproc import ProcessedOptimizer
from .recording import control_dependencies, minimize
from .switch import Frame, Patch, TF1CallError

__all__ = ["PATCHES"]


def _minimize(original: Any, frame: Frame, optimizer: Any, loss: Any, var_list: Any = None,
              name: str | None = None, **kwargs: Any) -> Any:
    return minimize(optimizer, loss, var_list=var_list, name=name, **kwargs)


def _tf1_minimize(original: Any, frame: Frame, optimizer: Any, loss: Any, global_step: Any = None,
                  var_list: Any = None, gate_gradients: Any = 1, aggregation_method: Any = None,
                  colocate_gradients_with_ops: bool = False, name: str | None = None, grad_loss: Any = None,
                  **kwargs: Any) -> Any:
    """A TF1 optimizer's ``minimize`` (TF1's signature) inside the switch: :func:`minimize`."""
    call = f"{type(optimizer).__name__}.minimize()"
    if global_step is not None:
        raise TF1CallError(f"{call} got global_step=: trainstack's loop counts the steps itself "
                           "(trainer.global_step; get_global_step_var() reads it); remove global_step=")
    if grad_loss is not None:
        raise TF1CallError(f"{call} got grad_loss=, which trainstack does not support; scale the loss "
                           "instead (minimize(loss * weight, ...))")
    # gate_gradients, aggregation_method, colocate_gradients_with_ops: TF1 graph scheduling only
    return minimize(optimizer, loss, var_list=var_list, name=name, **kwargs)


def _control_dependencies(original: Any, frame: Frame, control_inputs: Any) -> Any:
    return control_dependencies(original, control_inputs)


PATCHES = [
    Patch(lambda: keras.optimizers.Optimizer, "minimize", _minimize, only_if_missing=True),
    Patch(lambda: ProcessedOptimizer, "minimize", _minimize, only_if_missing=True),
    # TF1 optimizers have a minimize of their own: replaced (not only where missing) inside the switch
    Patch(lambda: tf.compat.v1.train.Optimizer, "minimize", _tf1_minimize),
    Patch(lambda: tf, "control_dependencies", _control_dependencies),
    Patch(lambda: tf.compat.v1, "control_dependencies", _control_dependencies),
]
