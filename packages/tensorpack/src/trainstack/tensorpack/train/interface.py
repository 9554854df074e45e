"""tensorpack 0.11's ``tensorpack.train.interface``: its names from ``trainstack.towers``."""
from trainstack.towers import launch_train_with_config

from .._replaced import unprovided

__all__ = ["launch_train_with_config"]

__getattr__ = unprovided(__name__)
