"""tensorpack 0.11's ``tensorpack.graph_builder.utils``: its names from ``trainstack.towers`` (stand-ins for
``allreduce_grads``, listed in ``_replaced``)."""
from trainstack.towers import LeastLoadedDeviceSetter

from .._replaced import stand_in_names, unprovided

__all__ = ["LeastLoadedDeviceSetter"] + stand_in_names(__name__)

__getattr__ = unprovided(__name__)
