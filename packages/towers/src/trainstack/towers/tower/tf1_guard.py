"""Clear errors for TF1 calls in a tower function that would otherwise fail obscurely or do nothing.

A tensorpack ``build_graph`` often still holds TF1 calls that TensorFlow 2
accepts but that cannot work in a trainstack tower:

- ``tf.compat.v1.get_variable(...)`` fails with an AttributeError deep in
  TensorFlow (no variable store) or creates a new variable on every trace.
- ``tf.summary.image(...)`` / ``tf.summary.scalar(...)`` (and ``histogram``,
  ``audio``, ``text``) record nothing when no summary writer is active (the case
  while a trainer traces its step), and ``tf.compat.v1.summary.*`` only warn:
  the summaries silently disappear.

:func:`install` (run when :mod:`trainstack.towers` is imported) wraps those
functions in ``tf.compat.v1`` and ``tf.summary``: called while a tower is built
(under a :class:`~trainstack.towers.TowerContext`), they raise
:class:`TF1CallError` naming the call and its replacement; anywhere else they
are TensorFlow's own, unchanged (a ``tf.summary`` call inside a tower with a
default writer set by the user also goes through).

It also gives Keras optimizers (which have no ``minimize`` in Keras 3)
tensorpack's ``opt.minimize(loss, var_list=..., name=...)``: it is
:func:`trainstack.towers.minimize`, so a custom trainer written as tensorpack's
GAN trainers are runs unchanged (see :mod:`trainstack.towers.tower.graph_build`).

:func:`check_eager_execution` is the error for training in TF1 graph mode
(``with tf.Graph().as_default():``), checked when training is set up.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

import tensorflow as tf

from .tower import get_current_tower_context

__all__ = ["TF1CallError", "install", "check_eager_execution"]


class TF1CallError(RuntimeError):
    """A tower function called a TF1 API that has no meaning in a trainstack tower."""

    # Exception's own __init__ lets autograph re-raise it with its type when it crosses a trace
    __init__ = Exception.__init__


_GET_VARIABLE = (
    "tf.compat.v1.get_variable() was called in tower {tower!r}: TF1 variable stores do not exist in "
    "a trainstack tower (the tower function runs on every trace, and variables are created once by "
    "objects the model owns). Create a Keras layer in ModelDesc.__init__ (keras.layers.Dense, "
    "Conv2D, BatchNormalization, ...) and call it in build_graph; for a bare weight, make it in "
    "__init__ with tf.Variable(...) or a layer's add_weight(...)")

_SUMMARY_V2 = (
    "tf.summary.{fn}() was called in tower {tower!r} with no summary writer: TensorFlow records "
    "nothing there, so the summary would be lost. Use trainstack's summaries: "
    "add_moving_summary(scalar) for scalars (printed, and written by the monitors), "
    "add_tensor_summary(x, ['histogram', 'rms', ...]) or add_param_summary(...) for tensors and "
    "variables; for images, compute them in a callback and write them with "
    "self.trainer.monitors.put_image(name, array)")

_SUMMARY_V1 = (
    "tf.compat.v1.summary.{fn}() was called in tower {tower!r}: TF1 summary collections do not exist "
    "in TensorFlow 2, so the summary would be lost. Use trainstack's summaries: "
    "add_moving_summary(scalar) for scalars, add_tensor_summary(x, ['histogram', 'rms', ...]) or "
    "add_param_summary(...) for tensors and variables (MergeAllSummaries reports them); for "
    "images, compute them in a callback and write them with self.trainer.monitors.put_image(name, array)")


def _has_default_writer() -> bool:
    try:
        from tensorflow.python.ops import summary_ops_v2  # noqa: PLC0415 - internal, guarded

        return bool(summary_ops_v2.has_default_writer())
    except (ImportError, AttributeError):  # pragma: no cover - TensorFlow internals moved
        return True  # unknown: let TensorFlow's own behaviour through


def _guard(original: Callable[..., Any], message: str, fn: str,
           allowed: Callable[[], bool] | None = None) -> Callable[..., Any]:
    @functools.wraps(original)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        ctx = get_current_tower_context()
        if ctx is not None and (allowed is None or not allowed()):
            raise TF1CallError(message.format(fn=fn, tower=ctx.name))
        return original(*args, **kwargs)

    guarded._trainstack_tf1_guard = True  # type: ignore[attr-defined]
    return guarded


def _wrap(module: Any, name: str, message: str, allowed: Callable[[], bool] | None = None) -> None:
    original = getattr(module, name, None)
    if original is None or getattr(original, "_trainstack_tf1_guard", False):
        return
    setattr(module, name, _guard(original, message, name, allowed))


def _optimizer_minimize(self: Any, loss: Any, var_list: Any = None, name: str | None = None,
                        **kwargs: Any) -> Any:
    """tensorpack's ``opt.minimize(loss, var_list=..., name=...)``: :func:`trainstack.towers.minimize`."""
    from .graph_build import minimize  # noqa: PLC0415 - graph_build imports the towers' trainers

    return minimize(self, loss, var_list=var_list, name=name, **kwargs)


def install() -> None:
    """Wrap the TF1 calls listed in the module docstring, and give Keras optimizers tensorpack's
    ``minimize`` (idempotent)."""
    import keras  # noqa: PLC0415

    if not hasattr(keras.optimizers.Optimizer, "minimize"):  # Keras 3 optimizers have none
        keras.optimizers.Optimizer.minimize = _optimizer_minimize
    _wrap(tf.compat.v1, "get_variable", _GET_VARIABLE)
    for name in ("scalar", "image", "histogram", "audio", "text", "tensor_summary", "merge", "merge_all"):
        _wrap(tf.compat.v1.summary, name, _SUMMARY_V1)
    for name in ("scalar", "image", "histogram", "audio", "text"):
        _wrap(tf.summary, name, _SUMMARY_V2, allowed=_has_default_writer)


# -- TF1 graph mode --------------------------------------------------------------------------------
def check_eager_execution(who: str) -> None:
    """Raise a clear error when ``who`` (e.g. ``"launch_train_with_config()"``) runs in TF1 graph
    mode: inside ``with tf.Graph().as_default():`` or after ``tf.compat.v1.disable_eager_execution()``.

    trainstack's trainers run eagerly and trace their steps with ``tf.function``; in graph mode
    they would fail later, deep inside a callback, with "numpy() is only available when eager
    execution is enabled".
    """
    if tf.executing_eagerly() or tf.inside_function():
        return
    raise RuntimeError(
        f"{who} was called in TensorFlow 1 graph mode: remove the `with tf.Graph().as_default():` "
        "block around the training code (and any tf.compat.v1.disable_eager_execution() call). "
        "trainstack trains eagerly and builds its graph itself, with tf.function; the model's "
        "layers (Keras) need no default graph")
