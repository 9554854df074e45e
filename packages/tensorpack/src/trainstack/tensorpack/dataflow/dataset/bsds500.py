"""tensorpack 0.11's ``tensorpack.dataflow.dataset.bsds500``: its names from
``trainstack.dataflow.dataset``."""
from trainstack.dataflow.dataset import BSDS500

from ..._replaced import unprovided

__all__ = ["BSDS500"]

__getattr__ = unprovided(__name__)
