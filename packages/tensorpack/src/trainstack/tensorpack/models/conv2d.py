"""tensorpack 0.11's ``tensorpack.models.conv2d``: its names from ``trainstack.tensorpack.tf1``."""
from trainstack.tensorpack.tf1 import Conv2D, Conv2DTranspose, Deconv2D

from .._replaced import unprovided

__all__ = ["Conv2D", "Deconv2D", "Conv2DTranspose"]

__getattr__ = unprovided(__name__)
