"""tensorpack 0.11's ``tensorpack.tfutils.optimizer``: its names from ``trainstack.tensorpack.tf1``
(``apply_grad_processors``: the core's, also taking a TF1 optimizer)."""
from trainstack.tensorpack.tf1 import apply_grad_processors

from .._replaced import unprovided

__all__ = ["apply_grad_processors"]

__getattr__ = unprovided(__name__)
