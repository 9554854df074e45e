"""tensorpack 0.11's ``tensorpack.compat``: its names from ``trainstack.tensorpack.tf1``."""
from trainstack.tensorpack.tf1 import tfv1

from .._replaced import unprovided

__all__ = ["tfv1"]

__getattr__ = unprovided(__name__)
