"""tensorpack 0.11's ``tensorpack.graph_builder``: its names from ``trainstack.towers``, ``trainstack.towers.tf1``."""
from trainstack.towers import LeastLoadedDeviceSetter
from trainstack.towers.tf1 import DataParallelBuilder

from .._replaced import unprovided

__all__ = ["DataParallelBuilder", "LeastLoadedDeviceSetter"]

__getattr__ = unprovided(__name__)
