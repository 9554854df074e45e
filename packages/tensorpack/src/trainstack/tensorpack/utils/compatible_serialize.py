"""tensorpack 0.11's ``tensorpack.utils.compatible_serialize``: ``serialize``'s ``loads`` and ``dumps``."""
from .._replaced import unprovided
from .serialize import dumps, loads

__all__ = ["loads", "dumps"]

__getattr__ = unprovided(__name__)
