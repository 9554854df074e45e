"""tensorpack 0.11's ``tensorpack.utils.loadcaffe``: its names from nowhere yet."""

from .._replaced import stand_in_names, unprovided

__all__ = []

__all__ += stand_in_names(__name__)

__getattr__ = unprovided(__name__)
