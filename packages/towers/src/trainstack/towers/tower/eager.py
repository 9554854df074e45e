"""trainstack runs eagerly, also inside a TF1 script's ``with tf.Graph().as_default():`` block.

tensorpack's scripts written for TF1 sessions often train inside
``with tf.Graph().as_default():``. trainstack's trainers run eagerly and trace
their steps with ``tf.function``; :func:`eager_execution` runs them so, inside
such a block too (the block's graph stays the default graph for the script's
own code, and what the script built in it stays usable). Only a process that
turned eager execution off (``tf.compat.v1.disable_eager_execution()``, TF1
sessions) cannot train, and :func:`check_eager_execution` says so.
"""
from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import tensorflow as tf

from trainstack.callbacks import tf_private

__all__ = ["check_eager_execution", "eager_execution", "runs_eagerly"]

logger = logging.getLogger("trainstack.towers")

F = TypeVar("F", bound=Callable[..., Any])


def _eager_mode() -> Any:
    # TensorFlow's own switch into eager mode: the only way out of a graph that a user made the
    # default with Graph.as_default()
    return tf_private.eager_mode()


def _eager_disabled() -> bool:
    return tf_private.eager_execution_disabled()


def check_eager_execution(who: str) -> None:
    """Raise a clear error when ``who`` (e.g. ``"launch_train_with_config()"``) is called in a
    process where eager execution was turned off (``tf.compat.v1.disable_eager_execution()``):
    trainstack cannot train there (it would fail later, deep in a callback, with "numpy() is only
    available when eager execution is enabled")."""
    if _eager_disabled():
        raise RuntimeError(
            f"{who} was called after tf.compat.v1.disable_eager_execution(): trainstack trains eagerly "
            "and builds its graph itself with tf.function, and TF1 sessions (tf.compat.v1.Session) do "
            "not exist in it. Remove the disable_eager_execution() call; a `with tf.Graph()."
            "as_default():` block around the training code may stay")


_told: set[str] = set()


@contextlib.contextmanager
def eager_execution(who: str) -> Iterator[None]:
    """Run the block eagerly: as it is outside any graph, or, inside a user's
    ``with tf.Graph().as_default():`` block, as it would run outside it. Refused (with
    :func:`check_eager_execution`'s error) when eager execution is off for the process."""
    check_eager_execution(who)
    if tf.executing_eagerly() or tf.inside_function():
        yield
        return
    if who not in _told:
        _told.add(who)
        logger.info("%s runs eagerly, as outside the `with tf.Graph().as_default():` block around it: "
                    "trainstack builds its own graph with tf.function; the block's graph stays the "
                    "default for the script's own code", who)
    with _eager_mode():
        yield


def runs_eagerly(method: F) -> F:
    """Run ``method`` (a trainer's entry point) under :func:`eager_execution`."""
    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        with eager_execution(f"{type(self).__name__}.{method.__name__}()"):
            return method(self, *args, **kwargs)

    return wrapper  # type: ignore[return-value]
