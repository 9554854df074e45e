"""tensorpack 0.11's ``tensorpack.tfutils.common``: its names from ``trainstack.tensorpack.tf1``."""
import tensorflow as tf

from trainstack.tensorpack.tf1 import get_global_step_var

from .._replaced import unprovided

__all__ = ["get_global_step_var", "get_tf_version_tuple"]


def get_tf_version_tuple() -> tuple[int, ...]:
    """TensorFlow's version as ``(major, minor)``, for comparisons, as tensorpack's."""
    return tuple(map(int, tf.__version__.split(".")[:2]))


__getattr__ = unprovided(__name__)
