"""tensorpack 0.11's ``tensorpack.dataflow.parallel_map``: its names from ``trainstack.dataflow``."""
from trainstack.dataflow import (
    MultiProcessMapAndBatchData,
    MultiProcessMapAndBatchDataZMQ,
    MultiProcessMapData,
    MultiProcessMapDataZMQ,
    MultiThreadMapData,
)

from .._replaced import unprovided

__all__ = ["MultiThreadMapData", "MultiProcessMapData", "MultiProcessMapDataZMQ", "MultiProcessMapAndBatchData", "MultiProcessMapAndBatchDataZMQ"]

__getattr__ = unprovided(__name__)
