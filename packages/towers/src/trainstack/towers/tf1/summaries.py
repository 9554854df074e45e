"""TF1 summaries in a tower: ``tf.summary.*``, ``tf.compat.v1.summary.*`` and ``add_param_summary``.

While a trainer traces its step no summary writer is active, so ``tf.summary.*``
would record nothing, and TF1 summary collections do not exist in TensorFlow 2:
inside a trace these calls raise :class:`~.switch.TF1CallError` naming
trainstack's summaries (``tf.summary.*`` under a default writer the user set
goes through). Outside a trace they are TensorFlow's own.

:func:`add_param_summary` is tensorpack's summaries of the model's variables.
"""
from __future__ import annotations

import re
from typing import Any, Callable, Sequence

import tensorflow as tf

from trainstack.callbacks import add_tensor_summary

from .switch import Frame, Patch, TF1CallError, current
from .trainable import trainable_of, variable_name

__all__ = ["PATCHES", "add_param_summary"]

_USE_INSTEAD = ("Use trainstack's summaries: add_moving_summary(scalar) for scalars (printed, and written by "
                "the monitors), add_tensor_summary(x, ['histogram', 'rms', ...]) or add_param_summary(...) "
                "for tensors and variables; for images, compute them in a callback and write them with "
                "self.trainer.monitors.put_image(name, array)")

SUMMARY_V2 = ("tf.summary.{fn}() was called in tower {tower!r} with no summary writer: TensorFlow records "
              "nothing there, so the summary would be lost. " + _USE_INSTEAD)

SUMMARY_V1 = ("tf.compat.v1.summary.{fn}() was called in tower {tower!r}: TF1 summary collections do not "
              "exist in TensorFlow 2, so the summary would be lost. " + _USE_INSTEAD)


def _has_default_writer() -> bool:
    try:
        from tensorflow.python.ops import summary_ops_v2  # noqa: PLC0415 - internal, guarded

        return bool(summary_ops_v2.has_default_writer())
    except (ImportError, AttributeError):  # pragma: no cover - TensorFlow internals moved
        return True  # unknown: let TensorFlow's own behaviour through


def _refuse(message: str, fn: str, allowed: Callable[[], bool] | None = None) -> Callable[..., Any]:
    def emulate(original: Any, frame: Frame, *args: Any, **kwargs: Any) -> Any:
        if frame.tower is None or (allowed is not None and allowed()):
            return original(*args, **kwargs)
        raise TF1CallError(message.format(fn=fn, tower=frame.tower.name))

    return emulate


PATCHES = (
    [Patch(lambda: tf.compat.v1.summary, fn, _refuse(SUMMARY_V1, fn))
     for fn in ("scalar", "image", "histogram", "audio", "text", "tensor_summary", "merge", "merge_all")]
    + [Patch(lambda: tf.summary, fn, _refuse(SUMMARY_V2, fn, allowed=_has_default_writer))
       for fn in ("scalar", "image", "histogram", "audio", "text")])


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
