"""tensorpack 0.11's ``tensorpack.train.model_desc``: its names from ``trainstack.tensorpack.tf1``."""
from trainstack.tensorpack.tf1 import ModelDesc, ModelDescBase

from .._replaced import unprovided

__all__ = ["ModelDesc", "ModelDescBase"]

__getattr__ = unprovided(__name__)
