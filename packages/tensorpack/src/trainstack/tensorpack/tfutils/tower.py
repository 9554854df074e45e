"""tensorpack 0.11's ``tensorpack.tfutils.tower``: its names from ``trainstack.towers`` and
``trainstack.tensorpack.tf1`` (TowerContext, TowerFunc: the core's, building towers in the TF1 room)."""
from trainstack.tensorpack.tf1 import TowerContext, TowerFunc
from trainstack.towers import get_current_tower_context

from .._replaced import unprovided

__all__ = ["get_current_tower_context", "TowerContext", "TowerFunc"]

__getattr__ = unprovided(__name__)
