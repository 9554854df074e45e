"""trainstack's core trains eagerly: its entry points refuse a process or a block that does not.

The trainers run eagerly and trace their steps with ``tf.function``. A process that
turned eager execution off (``tf.compat.v1.disable_eager_execution()``, TF1 sessions)
cannot train, and :func:`check_eager_execution` says so; so does a trainer's entry point
called inside a TF1 script's ``with tf.Graph().as_default():`` block, which
``trainstack.tensorpack``'s trainers run eagerly instead (its TF1 room).
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import tensorflow as tf

from trainstack.callbacks import tf_private

__all__ = ["check_eager_execution", "runs_eagerly"]

F = TypeVar("F", bound=Callable[..., Any])


def check_eager_execution(who: str) -> None:
    """Raise a clear error when ``who`` (e.g. ``"launch_train_with_config()"``) is called in a
    process where eager execution was turned off (``tf.compat.v1.disable_eager_execution()``):
    trainstack cannot train there (it would fail later, deep in a callback, with "numpy() is only
    available when eager execution is enabled")."""
    if tf_private.eager_execution_disabled():
        raise RuntimeError(
            f"{who} was called after tf.compat.v1.disable_eager_execution(): trainstack trains eagerly "
            "and builds its graph itself with tf.function, and TF1 sessions (tf.compat.v1.Session) do "
            "not exist in it. Remove the disable_eager_execution() call; a `with tf.Graph()."
            "as_default():` block around the training code may stay with trainstack.tensorpack's trainers")


def runs_eagerly(method: F) -> F:
    """``method`` (a trainer's entry point) runs only eagerly: refused (:func:`check_eager_execution`)
    in a process without eager execution, or inside a ``with tf.Graph().as_default():`` block."""
    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        who = f"{type(self).__name__}.{method.__name__}()"
        check_eager_execution(who)
        if not tf.executing_eagerly() and not tf.inside_function():
            raise RuntimeError(
                f"{who} was called inside a `with tf.Graph().as_default():` (or tf.compat.v1.Session) block: "
                "trainstack's core trains eagerly and builds its graph itself with tf.function. Call it "
                "outside the block, or use trainstack.tensorpack's trainers (from trainstack.tensorpack import "
                "SimpleTrainer), which run eagerly inside it as tensorpack's scripts need")
        return method(self, *args, **kwargs)

    return wrapper  # type: ignore[return-value]
