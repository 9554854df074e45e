"""tensorpack 0.11's ``tensorpack.dataflow.imgaug.geometry``: its names from
``trainstack.dataflow.imgaug``."""
from trainstack.dataflow.imgaug import Affine, Rotation, RotationAndCropValid, Shift

from ..._replaced import unprovided

__all__ = ["Shift", "Rotation", "RotationAndCropValid", "Affine"]

__getattr__ = unprovided(__name__)
