"""The error for training in TF1 graph mode: trainstack runs eagerly and traces its own steps."""
from __future__ import annotations

import tensorflow as tf

__all__ = ["check_eager_execution"]


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
