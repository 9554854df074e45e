"""tensorpack 0.11's ``tensorpack.graph_builder``: its names from ``trainstack.towers``, ``trainstack.tensorpack.tf1``."""
from trainstack.tensorpack.tf1 import DataParallelBuilder
from trainstack.towers import LeastLoadedDeviceSetter

from .._replaced import stand_in_names, unprovided

__all__ = ["DataParallelBuilder", "LeastLoadedDeviceSetter"]

__all__ += stand_in_names(__name__)

__getattr__ = unprovided(__name__)
