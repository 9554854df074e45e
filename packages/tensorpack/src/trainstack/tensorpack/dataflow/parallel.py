"""tensorpack 0.11's ``tensorpack.dataflow.parallel``: its names from ``trainstack.dataflow``."""
from trainstack.dataflow import (
    MultiProcessPrefetchData,
    MultiProcessRunner,
    MultiProcessRunnerZMQ,
    MultiThreadPrefetchData,
    MultiThreadRunner,
    PrefetchData,
    PrefetchDataZMQ,
)

from .._replaced import unprovided

__all__ = ["PrefetchData", "MultiProcessPrefetchData", "MultiProcessRunner", "MultiProcessRunnerZMQ", "MultiThreadRunner", "PrefetchDataZMQ", "MultiThreadPrefetchData"]

__getattr__ = unprovided(__name__)
