"""tensorpack's step counter for graph code: ``get_global_step_var()``.

The counter is the loop's ``trainer.global_step`` (in Python); graph code reads
a variable that a callback keeps equal to it. The callback is added to every
TowerTrainer once some code asked for the step (see :func:`step_mirror`, which
the room gives the trainers as an implicit callback).
"""
from __future__ import annotations

from typing import Any

import tensorflow as tf

from trainstack.loop import Callback
from trainstack.towers.trainers.trainer import TowerTrainer

__all__ = ["get_global_step_var", "GlobalStepView", "step_mirror", "advance_in_graph"]


_step_var: tf.Variable | None = None


class _GlobalStepMirror(Callback):
    """Keeps :func:`get_global_step_var`'s variable equal to ``trainer.global_step`` between steps."""

    chief_only = False

    def __init__(self, variable: tf.Variable) -> None:
        self._variable = variable

    def _before_train(self) -> None:
        self._variable.assign(self.trainer.loop.global_step)

    def _trigger_step(self) -> None:
        self._variable.assign(self.trainer.loop.global_step)


def step_mirror(trainer: Any) -> Callback | None:
    """The callback that keeps the step variable equal to ``trainer.global_step``: for every
    TowerTrainer once some code asked for the step (one assign per step); none before."""
    if _step_var is None or not isinstance(trainer, TowerTrainer):
        return None
    return _GlobalStepMirror(_step_var)


def advance_in_graph() -> None:
    """Inside a traced multi-step call, after each step of its graph loop: the step variable
    counts that step, so the next step of the loop reads its own global step (a schedule on
    ``get_global_step_var()`` decays step by step with ``steps_per_run > 1`` too). The mirror
    sets the variable to ``trainer.global_step`` again after the call."""
    if _step_var is not None:
        _step_var.assign_add(1)


class GlobalStepView:
    """tensorpack's global step variable outside a traced function: read-only, read when used.

    Converting it to a tensor (``tf.cast(step, ...)``, an LR schedule that reads it each time
    it is evaluated, as ``tf.compat.v1.train.exponential_decay(0.1, get_global_step_var(), ...)``
    does) reads the step variable at that moment, so a schedule given to an optimizer follows
    the training steps inside the traced step. ``int(view)`` is the current value.
    """

    dtype = tf.int64
    shape = tf.TensorShape([])
    name = "global_step"

    def __init__(self, variable: tf.Variable) -> None:
        self._variable = variable

    def __tf_tensor__(self, dtype: tf.DType | None = None, name: str | None = None) -> tf.Tensor:
        value = self._variable.read_value()
        if dtype is not None and dtype != tf.int64:
            value = tf.cast(value, dtype)
        return tf.identity(value, name=name or "global_step")

    def numpy(self) -> Any:
        return self._variable.numpy()

    def __int__(self) -> int:
        return int(self._variable.numpy())

    __index__ = __int__

    def __repr__(self) -> str:
        return f"<global step view: {int(self)}>"


@tf.autograph.experimental.do_not_convert
def get_global_step_var() -> Any:
    """The trainer's global step (steps finished before the current one), read-only.

    tensorpack's ``get_global_step_var()`` returned the graph's step variable; in trainstack
    the counter is ``trainer.global_step`` (in Python), and this reads a variable that every
    TowerTrainer sets to ``trainer.global_step`` before training and after every step (with
    ``steps_per_run > 1``, the graph loop advances it after each of its steps). Inside ``build_graph`` (or any traced step)
    it is an int64 tensor read each time the step runs. Outside a traced function (in
    ``optimizer()``, at a script's top level) it is a :class:`GlobalStepView`, read whenever it
    is used: ``exponential_decay(0.1, get_global_step_var(), 10, 0.5)`` given to an optimizer
    decays with the steps, as in tensorpack. It cannot be assigned (the loop owns the counter).
    In callbacks, read ``self.global_step``. One variable serves the process: the trainer
    training now.
    """
    global _step_var
    if _step_var is None:
        with tf.init_scope():
            _step_var = tf.Variable(0, dtype=tf.int64, trainable=False, name="global_step")
    if tf.inside_function():
        return tf.identity(_step_var.read_value(), name="global_step")
    return GlobalStepView(_step_var)
