"""tensorpack 0.11's ``tensorpack.models.fc``: its names from ``trainstack.tensorpack.tf1``."""
from trainstack.tensorpack.tf1 import FullyConnected

from .._replaced import unprovided

__all__ = ["FullyConnected"]

__getattr__ = unprovided(__name__)
