"""TF1 summaries: ``tf.summary.*``, ``tf.compat.v1.summary.*`` and ``add_param_summary``.

tensorpack's ``build_graph`` called TF1's summaries, and ``MergeAllSummaries`` wrote
them (after each epoch by default) to TensorBoard, the scalars also to the JSON
monitor and the console. While a tower is traced here:

- ``tf.summary.scalar/image/histogram/text`` and ``tf.compat.v1.summary.scalar/image/
  histogram/text`` in the main training tower build the summary as a tensor the step
  computes only on the steps ``MergeAllSummaries`` writes after, and record it in the
  trainer's ``SummaryCollection`` (see :mod:`.summary_ops`): the other steps pay
  nothing. Scalars go to every monitor, images, histograms and text to TensorBoard.
  In the other towers (inference towers, the other towers of a multi-tower step) they
  do nothing, as tensorpack kept the main training tower's summaries only. They
  return whether they recorded (``tf.summary``'s type), or None (``tf.compat.v1``:
  there is no serialized ``Summary`` to merge). ``step=`` and ``description=`` are
  ignored (the trainer's ``global_step`` is the step).
- ``tf.summary.*`` under a default writer the user set is TensorFlow's own.
- ``tf.compat.v1.summary.merge/merge_all`` raise :class:`~.switch.TF1CallError`: the
  summaries are recorded as they are made, there is nothing to merge or run; so do
  ``audio`` and ``tensor_summary`` (no monitor writes them).
- ``collections=`` keeps TF1's meaning: a summary is merged (written) only from the
  ``summaries`` collection (``tf.compat.v1.GraphKeys.SUMMARIES``), so one given other
  collections only (tensorpack's ``alexnet.py``: ``collections=['AAA']``) is not written, and
  not computed; the first such call logs so. Nothing reads another collection here (TF1 merged
  it with ``merge_all(key=...)`` and a session, both refused).

Outside any tower, while a trainer is built (the ``optimizer()`` its ``setup_graph``
calls, a tensorpack-style trainer's ``__init__``), ``tf.summary.scalar('learning_rate',
lr)`` records a summary of ``lr`` (a variable, read each time ``MergeAllSummaries``
writes: after each epoch, as tensorpack wrote the learning rate; a number; or a schedule
on the step, ``tf.compat.v1.train.exponential_decay(..., get_global_step_var(), ...)``,
which TensorFlow 2 makes a function: evaluated when written, in the last step's
``trigger_step``, where the step counter still holds that step, so the value written
is the rate that step applied, as tensorpack's summary fetched with the step); other
kinds there, and scalars of graph tensors, raise a TF1CallError naming ``build_graph``.
Everywhere else (another thread, a script's top level, a callback, an eager tower)
they are TensorFlow's own.

:func:`add_param_summary` is tensorpack's summaries of the model's variables.
"""
from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from typing import Any

import tensorflow as tf

from trainstack.callbacks import SummaryCollection, add_tensor_summary, is_variable

from .recording import constructing_trainer
from .summary_ops import histogram_value, image_value, record, scalar_value, tag_outside_towers, text_value
from .switch import Frame, Patch, TF1CallError, current
from .trainable import trainable_of, variable_name

__all__ = ["PATCHES", "add_param_summary", "in_merged_collections"]

MERGE = ("tf.compat.v1.summary.{fn}() was called in tower {tower!r}: TensorFlow 2 has nothing to merge or "
         "run. The tower's tf.summary.* and tf.compat.v1.summary.* are recorded as they are made, and "
         "MergeAllSummaries (a default callback) writes them; remove the {fn}() call")

NOT_WRITTEN = ("tf.{api}() was called in tower {tower!r}: no trainstack monitor writes {what}. Use "
               "tf.summary.scalar/image/histogram/text, or write it from a callback with "
               "self.trainer.monitors.put_event(summary)")

NOT_IN_SUMMARIES = ("tf.%s(%r, collections=%r): not written, as in TF1, where only the %r collection was "
                    "merged (MergeAllSummaries); add that collection to write it")

logger = logging.getLogger("trainstack.tensorpack")
_unwritten_logged: set[str] = set()

OUTSIDE_TOWERS = ("tf.{api}({name!r}) was called outside any tower while {trainer} was built (its "
                  "optimizer() or __init__): only a scalar of a variable or a number (the learning "
                  "rate) is recorded there. Call it in build_graph, where the step computes it")


def _has_default_writer() -> bool:
    try:
        from tensorflow.python.ops import summary_ops_v2  # noqa: PLC0415 - internal, guarded

        return bool(summary_ops_v2.has_default_writer())
    except (ImportError, AttributeError):  # pragma: no cover - TensorFlow internals moved
        return True  # unknown: let TensorFlow's own behaviour through


# -- how each call reads its arguments: (name, data, options) ------------------------------------------
def _v2_scalar(name: Any, data: Any, step: Any = None, description: Any = None) -> tuple:
    return name, data, {}


def _v2_image(name: Any, data: Any, step: Any = None, max_outputs: int = 3, description: Any = None) -> tuple:
    return name, data, {"max_outputs": max_outputs}


def _v2_histogram(name: Any, data: Any, step: Any = None, buckets: int | None = None,
                  description: Any = None) -> tuple:
    return name, data, {"buckets": buckets}


def _v2_text(name: Any, data: Any, step: Any = None, description: Any = None) -> tuple:
    return name, data, {}


def _v1_scalar(name: Any, tensor: Any, collections: Any = None, family: Any = None) -> tuple:
    return name, tensor, {"collections": collections, "family": family}


def _v1_image(name: Any, tensor: Any, max_outputs: int = 3, collections: Any = None, family: Any = None) -> tuple:
    return name, tensor, {"max_outputs": max_outputs, "collections": collections, "family": family}


def _v1_histogram(name: Any, values: Any, collections: Any = None, family: Any = None) -> tuple:
    return name, values, {"collections": collections, "family": family}


def _v1_text(name: Any, tensor: Any, collections: Any = None) -> tuple:
    return name, tensor, {"collections": collections}


def _value(api: str, kind: str, name: Any, data: Any, options: dict, tf1: bool) -> Callable[[], tf.Tensor]:
    """What summary ``name`` shows, built when called (in the summary's name scope)."""
    if kind == "scalar":
        return lambda: scalar_value(api, name, data)
    if kind == "histogram":
        return lambda: histogram_value(api, name, data, options.get("buckets"))
    if kind == "image":
        return lambda: image_value(api, name, data, options["max_outputs"], tf1_scaling=tf1)
    return lambda: text_value(api, name, data)


# -- the emulations ------------------------------------------------------------------------------------
def _recorded_call(kind: str, parse: Callable[..., tuple], tf1: bool) -> Callable[..., Any]:
    api = f"{'compat.v1.' if tf1 else ''}summary.{kind}"

    @tf.autograph.experimental.do_not_convert
    def emulate(original: Any, frame: Frame, *args: Any, **kwargs: Any) -> Any:
        if frame.tower is not None and tf.executing_eagerly():  # an eager tower: no trace
            return original(*args, **kwargs)
        if not tf1 and _has_default_writer():  # the user's own writer
            return original(*args, **kwargs)
        name, data, options = parse(*args, **kwargs)
        collections = options.pop("collections", None)
        if collections is not None and not in_merged_collections(api, name, collections):
            return None
        family = options.pop("family", None)
        if frame.tower is None:
            recorded = _outside_towers(api, kind, name, data, family)
            if recorded is None:
                return original(*args, **kwargs)
        else:
            recorded = record(frame.tower, api, kind, name, _value(api, kind, name, data, options, tf1), family,
                              tf1=tf1)
        return None if tf1 else tf.constant(recorded)

    return emulate


def in_merged_collections(api: str, name: Any, collections: Any) -> bool:
    """Whether TF1 merged a summary made with ``collections=`` into the summaries MergeAllSummaries
    wrote: when the list holds ``GraphKeys.SUMMARIES``. Logged (once per name) when it does not."""
    key = tf.compat.v1.GraphKeys.SUMMARIES
    names = [collections] if isinstance(collections, str) else list(collections)
    if key in names:
        return True
    if str(name) not in _unwritten_logged:
        _unwritten_logged.add(str(name))
        logger.warning(NOT_IN_SUMMARIES, api, name, names, key)
    return False


def _outside_towers(api: str, kind: str, name: Any, data: Any, family: Any) -> bool | None:
    """A summary made while a trainer is built, outside any tower: recorded in the trainer's
    collection if it is a scalar of a variable or a number; None (TensorFlow's own) when no
    trainer is being built."""
    trainer = constructing_trainer()
    collection = getattr(trainer, "summary_collection", None)
    if not isinstance(collection, SummaryCollection):
        return None
    variable = is_variable(data)
    if kind == "scalar" and not variable and callable(data):
        data = _ScheduleValue(data)  # TF1's decay functions outside a graph: read when written
        variable = True
    if kind != "scalar" or (not variable and tf.is_symbolic_tensor(data)):
        raise TF1CallError(OUTSIDE_TOWERS.format(api=api, name=name, trainer=type(trainer).__name__))
    add_tensor_summary(data, "scalar", name=tag_outside_towers(name, family), collection=collection)
    return True


class _ScheduleValue:
    """A learning-rate schedule (a function of no argument, as TF1's ``exponential_decay`` returns
    outside a graph) recorded as a summary: a read-only value the summaries read, like a
    variable, each time they are written."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        self._fn = fn
        self.dtype = tf.convert_to_tensor(fn()).dtype
        self.shape = tf.TensorShape([])
        self.name = getattr(fn, "__name__", "schedule")

    def __tf_tensor__(self, dtype: tf.DType | None = None, name: str | None = None) -> tf.Tensor:
        value = tf.convert_to_tensor(self._fn())
        return value if dtype is None or dtype == value.dtype else tf.cast(value, dtype)

    def numpy(self) -> Any:
        return tf.convert_to_tensor(self).numpy()

    def assign(self, value: Any) -> None:
        raise TypeError("a learning-rate schedule's summary follows the step; it cannot be assigned. "
                        "Use a variable (tf.compat.v1.get_variable) and ScheduledHyperParamSetter "
                        "to set the rate")


def _refusing(message: str, fn: str, **fields: Any) -> Callable[..., Any]:
    def emulate(original: Any, frame: Frame, *args: Any, **kwargs: Any) -> Any:
        if frame.tower is None:
            return original(*args, **kwargs)
        raise TF1CallError(message.format(fn=fn, tower=frame.tower.name, **fields))

    return emulate


_RECORDED_V1: dict[str, Callable[..., tuple[Any, ...]]] = {"scalar": _v1_scalar, "image": _v1_image, "histogram": _v1_histogram, "text": _v1_text}
_RECORDED_V2: dict[str, Callable[..., tuple[Any, ...]]] = {"scalar": _v2_scalar, "image": _v2_image, "histogram": _v2_histogram, "text": _v2_text}

PATCHES = (
    [Patch(lambda: tf.compat.v1.summary, fn, _recorded_call(fn, parse, tf1=True)) for fn, parse in _RECORDED_V1.items()]
    + [Patch(lambda: tf.summary, fn, _recorded_call(fn, parse, tf1=False)) for fn, parse in _RECORDED_V2.items()]
    + [Patch(lambda: tf.compat.v1.summary, fn, _refusing(MERGE, fn)) for fn in ("merge", "merge_all")]
    + [Patch(lambda: tf.compat.v1.summary, "audio", _refusing(NOT_WRITTEN, "audio", api="compat.v1.summary.audio",
                                                              what="audio")),
       Patch(lambda: tf.compat.v1.summary, "tensor_summary",
             _refusing(NOT_WRITTEN, "tensor_summary", api="compat.v1.summary.tensor_summary", what="tensor summaries")),
       Patch(lambda: tf.summary, "audio", _refusing(NOT_WRITTEN, "audio", api="summary.audio", what="audio"))])


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
    frame = current()
    if frame is None or frame.tower is None:
        raise RuntimeError("add_param_summary() must be called inside the tower function "
                           "(ModelDesc.build_graph), under the trainer's TowerContext")
    if not frame.tower.is_main_training_tower:
        return
    for v in trainable_of(frame.tower_func):
        vname = variable_name(v)
        for pattern, types in checked:
            if pattern.match(vname):
                add_tensor_summary(v, types, name="param-summary/" + vname)
