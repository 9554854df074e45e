"""tensorpack 0.11's ``tensorpack.dataflow.imgaug.paste``: its names from ``trainstack.dataflow.imgaug``."""
from trainstack.dataflow.imgaug import BackgroundFiller, CenterPaste, ConstantBackgroundFiller, RandomPaste

from ..._replaced import unprovided

__all__ = ["CenterPaste", "BackgroundFiller", "ConstantBackgroundFiller", "RandomPaste"]

__getattr__ = unprovided(__name__)
