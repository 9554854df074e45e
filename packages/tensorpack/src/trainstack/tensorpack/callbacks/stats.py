"""tensorpack 0.11's ``tensorpack.callbacks.stats``."""

from .._replaced import unprovided

__all__: list[str] = []

__getattr__ = unprovided(__name__)
