"""tensorpack 0.11's ``tensorpack.dataflow.raw``: its names from ``trainstack.dataflow``."""
from trainstack.dataflow import DataFromGenerator, DataFromIterable, DataFromList, DataFromQueue, FakeData

from .._replaced import unprovided

__all__ = ["FakeData", "DataFromQueue", "DataFromList", "DataFromGenerator", "DataFromIterable"]

__getattr__ = unprovided(__name__)
