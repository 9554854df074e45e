"""tensorpack 0.11's ``tensorpack.tfutils.symbolic_functions``: ``rms`` and ``print_stat``."""
from __future__ import annotations

from typing import Any

import tensorflow as tf

from .._replaced import unprovided

__all__ = ["print_stat", "rms"]


def _op_name(x: Any) -> str:
    name = getattr(x, "name", None) or "x"
    return name.split(":")[0]


def rms(x: Any, name: str | None = None) -> tf.Tensor:
    """The root mean square of ``x``, ``sqrt(mean(x ** 2))`` (named ``<x's name>/rms`` by default)."""
    if name is None:
        name = _op_name(x) + "/rms"
    value = tf.sqrt(tf.reduce_mean(tf.square(x)))
    return tf.identity(value, name=name.replace(":", "_")) if not tf.executing_eagerly() else value


def print_stat(x: Any, message: str | None = None) -> tf.Tensor:
    """``x``, printing its shape, mean (and rms for floats) and first values to stderr each time it is
    computed (``tf.print``, as tensorpack's ``tf.Print``): ``x = print_stat(x, message='x')``."""
    if message is None:
        message = _op_name(x)
    stats: list[Any] = [tf.shape(x), tf.reduce_mean(x)]
    if x.dtype.is_floating:
        stats.append(rms(x, name="rms"))
    printed = tf.print(message, *stats, x, summarize=20)
    with tf.control_dependencies([printed]):
        return tf.identity(x)


__getattr__ = unprovided(__name__)
