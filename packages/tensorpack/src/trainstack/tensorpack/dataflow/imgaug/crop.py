"""tensorpack 0.11's ``tensorpack.dataflow.imgaug.crop``: its names from ``trainstack.dataflow.imgaug``."""
from trainstack.dataflow.imgaug import (
    CenterCrop,
    GoogleNetRandomCropAndResize,
    RandomCrop,
    RandomCropRandomShape,
    RandomCutout,
)

from ..._replaced import unprovided

__all__ = ["RandomCrop", "CenterCrop", "RandomCropRandomShape", "GoogleNetRandomCropAndResize", "RandomCutout"]

__getattr__ = unprovided(__name__)
