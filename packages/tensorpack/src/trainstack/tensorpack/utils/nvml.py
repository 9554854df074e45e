"""tensorpack 0.11's ``tensorpack.utils.nvml``: its names from nowhere yet."""

from .._replaced import unprovided

__all__ = []

__getattr__ = unprovided(__name__)
