"""tensorpack 0.11's ``tensorpack.callbacks.summary``: its names from ``trainstack.callbacks``."""
from trainstack.callbacks import MergeAllSummaries, MovingAverageSummary, SimpleMovingAverage

from .._replaced import unprovided

__all__ = ["MovingAverageSummary", "MergeAllSummaries", "SimpleMovingAverage"]

__getattr__ = unprovided(__name__)
