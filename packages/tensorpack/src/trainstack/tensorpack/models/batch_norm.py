"""tensorpack 0.11's ``tensorpack.models.batch_norm``: its names from ``trainstack.tensorpack.tf1``."""
from trainstack.tensorpack.tf1 import BatchNorm, BatchRenorm

from .._replaced import unprovided

__all__ = ["BatchNorm", "BatchRenorm"]

__getattr__ = unprovided(__name__)
