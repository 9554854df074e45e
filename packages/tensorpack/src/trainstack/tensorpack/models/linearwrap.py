"""tensorpack 0.11's ``tensorpack.models.linearwrap``: its names from ``trainstack.tensorpack.tf1``."""
from trainstack.tensorpack.tf1 import LinearWrap

from .._replaced import unprovided

__all__ = ["LinearWrap"]

__getattr__ = unprovided(__name__)
