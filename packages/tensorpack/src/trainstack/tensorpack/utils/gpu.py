"""tensorpack 0.11's ``tensorpack.utils.gpu``: its names from ``trainstack.tensorpack.tf1``."""
from trainstack.tensorpack.tf1 import get_num_gpu
from trainstack.tensorpack.tf1 import get_num_gpu as get_nr_gpu

from .._replaced import unprovided

__all__ = ["get_nr_gpu", "get_num_gpu"]

__getattr__ = unprovided(__name__)
