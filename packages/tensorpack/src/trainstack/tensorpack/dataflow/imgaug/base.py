"""tensorpack 0.11's ``tensorpack.dataflow.imgaug.base``: its names from ``trainstack.dataflow.imgaug``."""
from trainstack.dataflow.imgaug import Augmentor, AugmentorList, ImageAugmentor, PhotometricAugmentor

from ..._replaced import unprovided

__all__ = ["Augmentor", "ImageAugmentor", "AugmentorList", "PhotometricAugmentor"]

__getattr__ = unprovided(__name__)
