"""tensorpack 0.11's ``tensorpack.dataflow.imgaug.misc``: its names from ``trainstack.dataflow.imgaug``."""
from trainstack.dataflow.imgaug import Flip, RandomResize, Resize, ResizeShortestEdge, Transpose

from ..._replaced import unprovided

__all__ = ["Flip", "Resize", "RandomResize", "ResizeShortestEdge", "Transpose"]

__getattr__ = unprovided(__name__)
