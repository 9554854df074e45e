"""tensorpack 0.11's ``tensorpack.dataflow.image``: its names from ``trainstack.dataflow``."""
from trainstack.dataflow import AugmentImageComponent, AugmentImageComponents, AugmentImageCoordinates, ImageFromFile

from .._replaced import unprovided

__all__ = ["ImageFromFile", "AugmentImageComponent", "AugmentImageCoordinates", "AugmentImageComponents"]

__getattr__ = unprovided(__name__)
