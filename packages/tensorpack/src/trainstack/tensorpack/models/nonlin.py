"""tensorpack 0.11's ``tensorpack.models.nonlin``: its names from ``trainstack.tensorpack.tf1``."""
from trainstack.tensorpack.tf1 import BNReLU, Maxout, PReLU

from .._replaced import unprovided

__all__ = ["Maxout", "PReLU", "BNReLU"]

__getattr__ = unprovided(__name__)
