"""tensorpack 0.11's ``tensorpack.dataflow.imgaug.convert``: its names from ``trainstack.dataflow.imgaug``."""
from trainstack.dataflow.imgaug import ColorSpace, Grayscale, ToFloat32, ToUint8

from ..._replaced import unprovided

__all__ = ["ColorSpace", "Grayscale", "ToUint8", "ToFloat32"]

__getattr__ = unprovided(__name__)
