"""tensorpack 0.11's ``tensorpack.dataflow.format``: its names from ``trainstack.dataflow``."""
from trainstack.dataflow import CaffeLMDB, HDF5Data, LMDBData, LMDBDataDecoder, SVMLightData

from .._replaced import unprovided

__all__ = ["HDF5Data", "LMDBData", "LMDBDataDecoder", "CaffeLMDB", "SVMLightData"]

__getattr__ = unprovided(__name__)
