"""tensorpack 0.11's ``tensorpack.models.shapes``: its names from ``trainstack.tensorpack.tf1``."""
from trainstack.tensorpack.tf1 import ConcatWith

from .._replaced import unprovided

__all__ = ["ConcatWith"]

__getattr__ = unprovided(__name__)
