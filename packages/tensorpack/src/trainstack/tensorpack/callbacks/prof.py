"""tensorpack 0.11's ``tensorpack.callbacks.prof``: its names from ``trainstack.callbacks`` (stand-ins for
``GPUMemoryTracker``, ``HostMemoryTracker``, listed in ``_replaced``)."""
from trainstack.callbacks import GPUUtilizationTracker, GraphProfiler, PeakMemoryTracker, ThroughputTracker

from .._replaced import stand_in_names, unprovided

__all__ = ["GPUUtilizationTracker", "GraphProfiler", "PeakMemoryTracker", "ThroughputTracker"] + stand_in_names(__name__)

__getattr__ = unprovided(__name__)
