"""tensorpack 0.11's ``tensorpack.tfutils.tower``: its names from ``trainstack.towers``."""
from trainstack.towers import TowerContext, TowerFunc, get_current_tower_context

from .._replaced import unprovided

__all__ = ["get_current_tower_context", "TowerContext", "TowerFunc"]

__getattr__ = unprovided(__name__)
