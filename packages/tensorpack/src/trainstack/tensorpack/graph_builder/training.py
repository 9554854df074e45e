"""tensorpack 0.11's ``tensorpack.graph_builder.training``: its names from ``trainstack.tensorpack.tf1``."""
from trainstack.tensorpack.tf1 import DataParallelBuilder

from .._replaced import unprovided

__all__ = ["DataParallelBuilder"]

__getattr__ = unprovided(__name__)
