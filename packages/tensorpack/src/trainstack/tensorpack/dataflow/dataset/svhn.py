"""tensorpack 0.11's ``tensorpack.dataflow.dataset.svhn``: its names from ``trainstack.dataflow.dataset``."""
from trainstack.dataflow.dataset import SVHNDigit

from ..._replaced import unprovided

__all__ = ["SVHNDigit"]

__getattr__ = unprovided(__name__)
