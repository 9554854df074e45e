"""tensorpack 0.11's ``tensorpack.train.config``: its names from ``trainstack.callbacks``,
``trainstack.tensorpack.tf1`` (the core's TrainConfig, with tensorpack's older arguments)."""
from trainstack.callbacks import DEFAULT_CALLBACKS, DEFAULT_MONITORS
from trainstack.tensorpack.tf1 import AutoResumeTrainConfig, TrainConfig

from .._replaced import unprovided

__all__ = ["TrainConfig", "AutoResumeTrainConfig", "DEFAULT_CALLBACKS", "DEFAULT_MONITORS"]

__getattr__ = unprovided(__name__)
