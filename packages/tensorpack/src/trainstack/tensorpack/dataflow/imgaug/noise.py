"""tensorpack 0.11's ``tensorpack.dataflow.imgaug.noise``: its names from ``trainstack.dataflow.imgaug``."""
from trainstack.dataflow.imgaug import GaussianNoise, JpegNoise, SaltPepperNoise

from ..._replaced import unprovided

__all__ = ["JpegNoise", "GaussianNoise", "SaltPepperNoise"]

__getattr__ = unprovided(__name__)
