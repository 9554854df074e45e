"""tensorpack 0.11's ``tensorpack.dataflow.dataset.mnist``: its names from ``trainstack.dataflow.dataset``."""
from trainstack.dataflow.dataset import FashionMnist, Mnist

from ..._replaced import unprovided

__all__ = ["Mnist", "FashionMnist"]

__getattr__ = unprovided(__name__)
