"""tensorpack 0.11's ``tensorpack.graph_builder``: its names from ``trainstack.tensorpack.tf1`` and this
package's ``utils``."""
from trainstack.tensorpack.tf1 import DataParallelBuilder

from .._replaced import stand_in_names, unprovided
from .utils import LeastLoadedDeviceSetter, allreduce_grads

__all__ = ["DataParallelBuilder", "LeastLoadedDeviceSetter", "allreduce_grads"]

__all__ += stand_in_names(__name__)

__getattr__ = unprovided(__name__)
