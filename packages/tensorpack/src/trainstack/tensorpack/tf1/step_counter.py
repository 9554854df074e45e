"""tensorpack's step counter for graph code: ``get_global_step_var()``.

The counter is the loop's ``trainer.global_step`` (in Python); graph code reads
a variable that a callback keeps equal to it. The callback is added to every
TowerTrainer once some code asked for the step (see :func:`step_mirror`, which
the room gives the trainers as an implicit callback). Only this layer's trainers keep it:
read in a training tower that a core trainer traces, it would stay 0, so there it is an error
naming the trainer to use (:func:`mirror_step_of` marks the tower functions of this layer's
trainers).
"""
from __future__ import annotations

import weakref
from typing import Any

import tensorflow as tf

from trainstack.callbacks.eager_state import eager_state
from trainstack.loop import Callback
from trainstack.towers import TowerTrainer, get_current_tower_context

from . import switch

__all__ = ["get_global_step_var", "GlobalStepView", "step_mirror", "advance_in_graph", "mirror_step_of", "last_trainer"]


_step_var: tf.Variable | None = None
_last_trainer: weakref.ref[Any] | None = None
#: the tower functions of this layer's trainers, whose training towers may read the step
_mirrored: weakref.WeakSet[Any] = weakref.WeakSet()


def mirror_step_of(tower_func: Any) -> None:
    """``tower_func`` is trained by one of this layer's trainers, which keep the step variable
    equal to the loop's step: its training towers may call :func:`get_global_step_var`."""
    _mirrored.add(tower_func)


def _check_mirrored() -> None:
    """In a training tower traced for a core trainer, the step variable would silently stay 0:
    a RuntimeError naming the trainer to use."""
    ctx = get_current_tower_context()
    if not tf.inside_function() or ctx is None or not ctx.is_training:
        return
    frame = switch.current()
    if frame is not None and (frame.tower is None or frame.tower_func in _mirrored):
        return  # a tensorpack trainer's construction, or its tower
    raise RuntimeError(
        "get_global_step_var() was called in a training tower traced by a trainer of trainstack's core "
        "(trainstack.towers, trainstack.distributed), which does not keep tensorpack's step variable: its "
        "value would stay 0. Train with trainstack.tensorpack's trainer of the same name (from "
        "trainstack.tensorpack import SimpleTrainer, ...), or in TensorFlow 2 code read the optimizer's "
        "step counter (optimizer.iterations)")


class _GlobalStepMirror(Callback):
    """Keeps :func:`get_global_step_var`'s variable equal to ``trainer.global_step`` between steps."""

    chief_only = False

    def __init__(self, variable: tf.Variable) -> None:
        self._variable = variable

    def _before_train(self) -> None:
        self._variable.assign(self.trainer.loop.global_step)

    def _trigger_step(self) -> None:
        self._variable.assign(self.trainer.loop.global_step)


def last_trainer() -> Any:
    """The last of this layer's trainers whose callbacks were set up (the one training now), or None."""
    return None if _last_trainer is None else _last_trainer()


def step_mirror(trainer: Any) -> Callback | None:
    """The callback that keeps the step variable equal to ``trainer.global_step``: for every
    TowerTrainer once some code asked for the step (one assign per step); none before.
    Records ``trainer`` as :func:`last_trainer`."""
    global _last_trainer
    _last_trainer = weakref.ref(trainer)
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
    _check_mirrored()
    if _step_var is None:
        with eager_state():
            _step_var = tf.Variable(0, dtype=tf.int64, trainable=False, name="global_step")
    if tf.inside_function():
        return tf.identity(_step_var.read_value(), name="global_step")
    return GlobalStepView(_step_var)
