"""tensorpack 0.11's ``tensorpack.dataflow.dataset.cifar``: its names from ``trainstack.dataflow.dataset``."""
from trainstack.dataflow.dataset import Cifar10, Cifar100, CifarBase

from ..._replaced import unprovided

__all__ = ["CifarBase", "Cifar10", "Cifar100"]

__getattr__ = unprovided(__name__)
