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

tensorpack's learning-rate variable, ``lr = tf.compat.v1.get_variable('learning_rate',
initializer=0.1, trainable=False)`` (or a ``tf.Variable``) given to a Keras optimizer in
``optimizer()`` or a custom trainer's ``__init__``: Keras 3 refuses a variable there, so inside
the switch a Keras optimizer is built with a callable that returns the variable. The optimizer
reads the variable at every step (``optimizer.learning_rate`` is the variable itself, which
``ScheduledHyperParamSetter('learning_rate', ...)`` assigns) and tracks it, so checkpoints of
the optimizer hold its value, as TF1 graphs saved it. Elsewhere Keras' own ``__init__`` runs.
"""
from __future__ import annotations

import importlib
from typing import Any

import keras
import tensorflow as tf

from trainstack.callbacks import is_variable
from trainstack.towers.tower.gradproc import ProcessedOptimizer

from .recorded_ops import control_dependencies, minimize
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


def _keras_init(original: Any, frame: Frame, optimizer: Any, *args: Any, **kwargs: Any) -> None:
    """A Keras optimizer's ``__init__`` inside the switch: a variable learning rate is read at each
    step through a callable, and tracked (checkpointed) as the optimizer's ``_tf1_learning_rate``."""
    lr = args[0] if args else kwargs.get("learning_rate")
    if lr is None or not is_variable(lr):
        original(optimizer, *args, **kwargs)
        return
    if tuple(lr.shape) != () or not tf.as_dtype(lr.dtype).is_floating:
        raise TF1CallError(f"{type(optimizer).__name__}(learning_rate={lr.name}): a learning-rate variable "
                           f"must be a floating-point scalar, got shape {tuple(lr.shape)}, dtype "
                           f"{tf.as_dtype(lr.dtype).name}")
    read = _VariableLearningRate(lr)
    if args:
        args = (read, *args[1:])
    else:
        kwargs["learning_rate"] = read
    original(optimizer, *args, **kwargs)
    optimizer._tf1_learning_rate = lr  # noqa: SLF001 - tracked: checkpoints of the optimizer hold it


class _VariableLearningRate:
    """The callable a Keras optimizer is given for a learning-rate variable: returns the variable,
    so ``optimizer.learning_rate`` is the variable (settable by name) and each step reads it."""

    def __init__(self, variable: Any) -> None:
        self.variable = variable

    def __call__(self) -> Any:
        return self.variable

    def get_config(self) -> dict[str, Any]:  # Keras' get_config serializes a callable learning rate
        return {"learning_rate": float(self.variable.numpy())}

    def __repr__(self) -> str:
        return f"<learning rate read from {self.variable.name}>"


def _control_dependencies(original: Any, frame: Frame, control_inputs: Any) -> Any:
    return control_dependencies(original, control_inputs)


PATCHES = [
    # every Keras optimizer's constructor (Keras' base class, where learning_rate is checked)
    Patch(lambda: importlib.import_module("keras.src.optimizers.base_optimizer").BaseOptimizer, "__init__",
          _keras_init),
    Patch(lambda: keras.optimizers.Optimizer, "minimize", _minimize, only_if_missing=True),
    Patch(lambda: ProcessedOptimizer, "minimize", _minimize, only_if_missing=True),
    # TF1 optimizers have a minimize of their own: replaced (not only where missing) inside the switch
    Patch(lambda: tf.compat.v1.train.Optimizer, "minimize", _tf1_minimize),
    Patch(lambda: tf, "control_dependencies", _control_dependencies),
    Patch(lambda: tf.compat.v1, "control_dependencies", _control_dependencies),
]
