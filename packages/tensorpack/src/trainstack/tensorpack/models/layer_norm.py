"""tensorpack 0.11's ``tensorpack.models.layer_norm``: its names from ``trainstack.tensorpack.tf1``."""
from trainstack.tensorpack.tf1 import InstanceNorm, LayerNorm

from .._replaced import unprovided

__all__ = ["LayerNorm", "InstanceNorm"]

__getattr__ = unprovided(__name__)
