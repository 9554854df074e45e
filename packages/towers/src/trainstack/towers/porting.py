"""tensorpack's model-side helpers, for scripts ported with ``from trainstack import *``.

- :func:`regularize_cost`, :func:`l2_regularizer`, :func:`l1_regularizer`: a
  regularization cost over the model's trainable variables whose names match a
  regex, called inside ``build_graph`` (tensorpack's ``models/regularize.py``).
- :func:`add_param_summary`: summaries (histogram, rms, ...) of the model's
  trainable variables whose names match, reported by ``MergeAllSummaries``.
- :func:`get_global_step_var`: the trainer's step counter, read inside a step.
- :class:`DataParallelBuilder`: tensorpack's graph builder; not provided, and
  says what replaces it.

Variable names are those the tower function gives its variables: the Keras
layer's name and the weight's, without the tower's name scope and ``:0``
(``conv1/kernel``; tensorpack's layers named theirs ``conv1/W``, so update the
regexes of a ported script accordingly).
"""
from __future__ import annotations

import logging
import re
import sys
import weakref
from typing import Any, Callable, Sequence

import tensorflow as tf

from trainstack.callbacks import add_tensor_summary
from trainstack.loop import Callback
from trainstack.loop import trainer as _loop_trainer

from .trainers.trainer import TowerTrainer
from .tower.tower import (TowerFunc, _frozen_ids, _model_parts, _walk_variables, get_current_tower_context,
                    variable_name)

__all__ = ["regularize_cost", "l2_regularizer", "l1_regularizer", "add_param_summary",
           "get_global_step_var", "DataParallelBuilder"]

logger = logging.getLogger("trainstack.towers")


# -- the tower function being built ---------------------------------------------------------------
def _building_tower_func(who: str) -> TowerFunc:
    """The TowerFunc whose tower is being built (found on the call stack), or a clear error."""
    frame = sys._getframe(1)
    while frame is not None:
        owner = frame.f_locals.get("self")
        if isinstance(owner, TowerFunc):
            return owner
        frame = frame.f_back
    raise RuntimeError(f"{who} must be called inside the tower function (ModelDesc.build_graph) while a "
                       "trainer or predictor builds a tower: it reads the model's variables from there")


def _trainable(tower_func: TowerFunc) -> list[tf.Variable]:
    """The model's trainable variables: those of the layers, modules and variables its owner (the
    ModelDesc) holds, built before or in the tower, then any other the tower function created so
    far (during the first build: the layers called before this point); frozen layers excluded."""
    owner = tower_func.model_owner
    reached: dict[int, tf.Variable] = {}
    if owner is not None:
        parts = ([owner] if isinstance(owner, (tf.keras.layers.Layer, tf.Module))
                 else list(_model_parts(owner).values()))
        _walk_variables(parts, reached)
    for v in tower_func.variables:
        reached.setdefault(id(v), v)
    frozen = _frozen_ids(owner)
    return [v for v in reached.values() if v.trainable and id(v) not in frozen]


# -- regularization -------------------------------------------------------------------------------
_logged: "weakref.WeakKeyDictionary[TowerFunc, set]" = weakref.WeakKeyDictionary()


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
    ctx = get_current_tower_context()
    if ctx is None:
        raise RuntimeError("regularize_cost() must be called inside the tower function "
                           "(ModelDesc.build_graph), under the trainer's TowerContext")
    if not ctx.is_training:
        return tf.constant(0.0, tf.float32, name="empty_" + name)
    tower_func = _building_tower_func("regularize_cost()")
    pattern = re.compile(regex)
    costs, names = [], []
    with tf.name_scope(name + "_internals"):
        for v in _trainable(tower_func):
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


# -- parameter summaries --------------------------------------------------------------------------
@tf.autograph.experimental.do_not_convert
def add_param_summary(*summary_lists: tuple[str, Sequence[str]], collections: None = None) -> None:
    """Summaries of the model's trainable variables, by regex (tensorpack's ``add_param_summary``)::

        add_param_summary(('.*/kernel', ['histogram', 'rms']), ('.*/gamma', ['scalar']))

    Each argument is ``(regex, types)``; a variable matches when the regex matches its whole
    name (``re.match`` with ``$`` appended, as tensorpack). ``types`` are those of
    :func:`~trainstack.callbacks.add_tensor_summary` (``scalar``, ``histogram``, ``mean``,
    ``rms``, ``sparsity``); they are reported by ``MergeAllSummaries`` (a default callback) as
    ``param-summary/<variable>-<type>``. The variables are read when reported, not every step.
    Call it inside ``build_graph``; only the main training tower records (elsewhere it does
    nothing). ``collections`` (TF1 graph collections) must be None.
    """
    if collections is not None:
        raise TypeError("add_param_summary(collections=...) named TF1 graph collections; TF2 has none. "
                        "The summaries go to the trainer's SummaryCollection (MergeAllSummaries reports them)")
    checked = []
    for item in summary_lists:
        if not (isinstance(item, (list, tuple)) and len(item) == 2 and isinstance(item[0], str)):
            raise TypeError(f"add_param_summary() takes (regex, [summary types]) pairs, got {item!r}")
        regex, types = item
        checked.append((re.compile(regex if regex.endswith("$") else regex + "$"),
                        [types] if isinstance(types, str) else list(types)))
    ctx = get_current_tower_context()
    if ctx is None:
        raise RuntimeError("add_param_summary() must be called inside the tower function "
                           "(ModelDesc.build_graph), under the trainer's TowerContext")
    if not ctx.is_main_training_tower:
        return
    tower_func = _building_tower_func("add_param_summary()")
    for v in _trainable(tower_func):
        vname = variable_name(v)
        for pattern, types in checked:
            if pattern.match(vname):
                add_tensor_summary(v, types, name="param-summary/" + vname)


# -- the global step ------------------------------------------------------------------------------
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


#: tower functions that read the global step; _read_in_step: read by other traced code
_readers: "weakref.WeakSet[TowerFunc]" = weakref.WeakSet()
_read_in_step = False


def _mirror_factory(trainer: Any) -> Callback | None:
    """A mirror for a trainer whose tower function (or, for a custom step, any traced code) read
    the step: other trainers, and plain loop trainers, get nothing and pay nothing."""
    if _step_var is None or not isinstance(trainer, TowerTrainer):
        return None
    if trainer._tower_func in _readers or _read_in_step:
        return _GlobalStepMirror(_step_var)
    return None


_loop_trainer._implicit_callbacks.append(_mirror_factory)


@tf.autograph.experimental.do_not_convert
def get_global_step_var() -> tf.Tensor:
    """The trainer's global step (steps finished before the current one), as an int64 tensor.

    tensorpack's ``get_global_step_var()`` returned the graph's step variable; in trainstack
    the counter is ``trainer.global_step`` (in Python), and this is a read-only view of it
    for graph code: inside ``build_graph`` (or any traced step) it reads, every time the step
    runs, a variable that the trainer sets to ``trainer.global_step`` before training and
    after every step (with ``steps_per_run > 1``, once per run of steps). Outside a traced
    function it returns the current value. Use it where it is needed (e.g.
    ``tf.cast(get_global_step_var(), tf.float32)`` in ``build_graph``) rather than keeping
    the value; it cannot be assigned (the loop owns the counter). In callbacks, read
    ``self.global_step``. One variable serves the process: the trainer training now.
    """
    global _step_var, _read_in_step
    if _step_var is None:
        with tf.init_scope():
            _step_var = tf.Variable(0, dtype=tf.int64, trainable=False, name="global_step")
    if get_current_tower_context() is not None:
        try:
            _readers.add(_building_tower_func("get_global_step_var()"))
        except RuntimeError:  # a tower context without a TowerFunc (a custom trainer's own graph)
            _read_in_step = True
    elif tf.inside_function():
        _read_in_step = True
    return tf.identity(_step_var.read_value(), name="global_step")


# -- graph builders --------------------------------------------------------------------------------
class DataParallelBuilder:
    """tensorpack's graph builder for data-parallel towers; not provided in trainstack.

    The data-parallel trainers build the towers themselves:
    ``SyncMultiGPUTrainerReplicated``, ``SyncMultiGPUTrainerParameterServer`` and
    ``AsyncMultiGPUTrainer`` (``launch_train_with_config(config, SyncMultiGPUTrainerReplicated(
    num_gpus))``). A custom multi-tower trainer (e.g. a multi-GPU GAN) traces its own step with
    ``TracedStep``, calling the ``TowerFunc`` once per device under ``TowerContext(f'tower{k}',
    is_training=True, index=k)`` inside ``tf.device(...)``; see ``examples/gan_toy.py``.
    """

    _MESSAGE = ("tensorpack's DataParallelBuilder is not provided in trainstack: use a data-parallel "
                "trainer (SyncMultiGPUTrainerReplicated, SyncMultiGPUTrainerParameterServer, "
                "AsyncMultiGPUTrainer) with launch_train_with_config, or trace your own step with "
                "TracedStep, calling the TowerFunc once per device under TowerContext(f'tower{k}', "
                "is_training=True, index=k) (see examples/gan_toy.py and docs/porting.md)")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(self._MESSAGE)

    @staticmethod
    def build_on_towers(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(DataParallelBuilder._MESSAGE)

    @staticmethod
    def call_for_each_tower(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(DataParallelBuilder._MESSAGE)
