"""tensorpack 0.11's ``tensorpack.tfutils.common`` (``get_global_step_var``: ``trainstack.tensorpack.tf1``'s)."""
import tensorflow as tf

from trainstack.tensorpack.tf1 import get_global_step_var

from .._replaced import stand_in_names, unprovided
from .collect_env import collect_env_info

__all__ = ["get_global_step_var", "get_global_step_value", "get_tf_version_tuple", "collect_env_info"]


def get_tf_version_tuple() -> tuple[int, ...]:
    """TensorFlow's version as ``(major, minor)``, for comparisons, as tensorpack's."""
    return tuple(map(int, tf.__version__.split(".")[:2]))


def get_global_step_value() -> int:
    """The global step as a Python int: the steps the current (or last) trainer has run, as
    ``get_global_step_var()`` reads it (``self.global_step`` in callbacks is the same number)."""
    return int(get_global_step_var())


__all__ += stand_in_names(__name__)

__getattr__ = unprovided(__name__)
