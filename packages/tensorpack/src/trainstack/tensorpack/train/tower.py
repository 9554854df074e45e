"""tensorpack 0.11's ``tensorpack.train.tower``: its names from ``trainstack.tensorpack.tf1``."""
from trainstack.tensorpack.tf1 import SingleCostTrainer, TowerTrainer

from .._replaced import unprovided

__all__ = ["SingleCostTrainer", "TowerTrainer"]

__getattr__ = unprovided(__name__)
