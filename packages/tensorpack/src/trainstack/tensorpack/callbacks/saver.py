"""tensorpack 0.11's ``tensorpack.callbacks.saver``: its names from ``trainstack.callbacks``."""
from trainstack.callbacks import MaxSaver, MinSaver, ModelSaver

from .._replaced import unprovided

__all__ = ["ModelSaver", "MinSaver", "MaxSaver"]

__getattr__ = unprovided(__name__)
