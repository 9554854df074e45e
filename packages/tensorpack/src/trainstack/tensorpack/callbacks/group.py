"""tensorpack 0.11's ``tensorpack.callbacks.group``: its names from ``trainstack.loop``."""
from trainstack.loop import Callbacks

from .._replaced import unprovided

__all__ = ["Callbacks"]

__getattr__ = unprovided(__name__)
