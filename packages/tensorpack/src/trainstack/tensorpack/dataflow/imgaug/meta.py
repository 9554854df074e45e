"""tensorpack 0.11's ``tensorpack.dataflow.imgaug.meta``: its names from ``trainstack.dataflow.imgaug``."""
from trainstack.dataflow.imgaug import Identity, MapImage, RandomApplyAug, RandomChooseAug, RandomOrderAug

from ..._replaced import unprovided

__all__ = ["RandomChooseAug", "MapImage", "Identity", "RandomApplyAug", "RandomOrderAug"]

__getattr__ = unprovided(__name__)
