"""tensorpack 0.11's ``tensorpack.callbacks.inference``: its names from ``trainstack.towers``."""
from trainstack.towers import BinaryClassificationStats, ClassificationError, Inferencer, ScalarStats

from .._replaced import unprovided

__all__ = ["ScalarStats", "Inferencer", "ClassificationError", "BinaryClassificationStats"]

__getattr__ = unprovided(__name__)
