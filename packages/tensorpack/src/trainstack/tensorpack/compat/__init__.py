"""tensorpack 0.11's ``tensorpack.compat`` (``tfv1``: ``trainstack.tensorpack.tf1``'s)."""
import tensorflow as tf

from trainstack.tensorpack.tf1 import tfv1

from .._replaced import unprovided

__all__ = ["tfv1", "is_tfv2"]


def is_tfv2() -> bool:
    """Whether TensorFlow runs with its 2.x behaviour (not after ``tf.compat.v1.disable_v2_behavior()``)."""
    return bool(tf.__internal__.tf2.enabled())


__getattr__ = unprovided(__name__)
