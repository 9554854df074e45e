"""tensorpack 0.11's ``tensorpack.predict.config``: its names from ``trainstack.towers``."""
from trainstack.towers import PredictConfig

from .._replaced import unprovided

__all__ = ["PredictConfig"]

__getattr__ = unprovided(__name__)
