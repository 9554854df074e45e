"""tensorpack 0.11's ``tensorpack.models.pool``: its names from ``trainstack.tensorpack.tf1``."""
from trainstack.tensorpack.tf1 import AvgPooling, FixedUnPooling, GlobalAvgPooling, MaxPooling

from .._replaced import unprovided

__all__ = ["MaxPooling", "FixedUnPooling", "AvgPooling", "GlobalAvgPooling"]

__getattr__ = unprovided(__name__)
