"""tensorpack 0.11's ``tensorpack.models.regularize``: its names from ``trainstack.tensorpack.tf1`` (stand-ins
for ``regularize_cost_from_collection``, listed in ``_replaced``)."""
from trainstack.tensorpack.tf1 import Dropout, l1_regularizer, l2_regularizer, regularize_cost

from .._replaced import stand_in_names, unprovided

__all__ = ["regularize_cost", "l2_regularizer", "l1_regularizer", "Dropout"] + stand_in_names(__name__)

__getattr__ = unprovided(__name__)
