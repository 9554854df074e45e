"""tensorpack 0.11's ``tensorpack.contrib.keras``: its names from ``trainstack.tensorpack.tf1``."""
from trainstack.tensorpack.tf1 import KerasPhaseCallback

from .._replaced import unprovided

__all__ = ["KerasPhaseCallback"]

__getattr__ = unprovided(__name__)
