"""tensorpack 0.11's ``tensorpack.tfutils.common`` (``get_global_step_var``: ``trainstack.tensorpack.tf1``'s)."""
import tensorflow as tf

from trainstack.tensorpack.tf1 import get_global_step_var, last_trainer

from .._replaced import stand_in_names, unprovided
from .collect_env import collect_env_info

__all__ = ["get_global_step_var", "get_global_step_value", "get_tf_version_tuple", "collect_env_info"]


def get_tf_version_tuple() -> tuple[int, ...]:
    """TensorFlow's version as ``(major, minor)``, for comparisons, as tensorpack's."""
    return tuple(map(int, tf.__version__.split(".")[:2]))


def get_global_step_value() -> int:
    """The global step as a Python int: the steps finished by the trainer training now (or the last one of
    this layer's trainers that trained), which ``get_global_step_var()`` reads in graph code and
    ``self.global_step`` in callbacks. Before any trainer, a RuntimeError (tensorpack had no session)."""
    trainer = last_trainer()
    if trainer is None:
        raise RuntimeError("get_global_step_value() was called before any trainstack.tensorpack trainer trained "
                           "in this process: there is no step yet (read trainer.global_step once it trains)")
    return int(trainer.global_step)


__all__ += stand_in_names(__name__)

__getattr__ = unprovided(__name__)
