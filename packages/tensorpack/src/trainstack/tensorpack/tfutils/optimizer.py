"""tensorpack 0.11's ``tensorpack.tfutils.optimizer``: its names from ``trainstack.towers``."""
from trainstack.towers import apply_grad_processors

from .._replaced import unprovided

__all__ = ["apply_grad_processors"]

__getattr__ = unprovided(__name__)
