"""tensorpack 0.11's ``tensorpack.dataflow.serialize``: its names from ``trainstack.dataflow``."""
from trainstack.dataflow import HDF5Serializer, LMDBSerializer, NumpySerializer, TFRecordSerializer

from .._replaced import unprovided

__all__ = ["LMDBSerializer", "NumpySerializer", "TFRecordSerializer", "HDF5Serializer"]

__getattr__ = unprovided(__name__)
