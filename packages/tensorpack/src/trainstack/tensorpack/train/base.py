"""tensorpack 0.11's ``tensorpack.train.base``: its names from ``trainstack.loop``."""
from trainstack.loop import StopTraining, Trainer

from .._replaced import unprovided

__all__ = ["StopTraining", "Trainer"]

__getattr__ = unprovided(__name__)
