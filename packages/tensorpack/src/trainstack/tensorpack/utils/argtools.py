"""tensorpack 0.11's ``tensorpack.utils.argtools``: its names from ``trainstack.loop``."""
from trainstack.loop import memoized, memoized_method

from .._replaced import unprovided

__all__ = ["memoized", "memoized_method"]

__getattr__ = unprovided(__name__)
