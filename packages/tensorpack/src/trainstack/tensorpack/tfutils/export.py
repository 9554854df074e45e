"""tensorpack 0.11's ``tensorpack.tfutils.export``: its names from ``trainstack.towers``."""
from trainstack.towers import ModelExporter

from .._replaced import unprovided

__all__ = ["ModelExporter"]

__getattr__ = unprovided(__name__)
