"""tensorpack 0.11's ``tensorpack.utils``: its names from ``trainstack.dataflow``."""
from trainstack.dataflow import fix_rng_seed, get_rng

from .._replaced import unprovided
from . import logger

__all__ = ["get_rng", "fix_rng_seed", "logger"]

__getattr__ = unprovided(__name__)
