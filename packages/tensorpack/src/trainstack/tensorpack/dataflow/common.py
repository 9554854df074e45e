"""tensorpack 0.11's ``tensorpack.dataflow.common``: its names from ``trainstack.dataflow``."""
from trainstack.dataflow import (
    BatchData,
    BatchDataByShape,
    CacheData,
    ConcatData,
    FixedSizeData,
    JoinData,
    LocallyShuffleData,
    MapData,
    MapDataComponent,
    PrintData,
    RandomChooseData,
    RandomMixData,
    RepeatedData,
    RepeatedDataPoint,
    SelectComponent,
    TestDataSpeed,
)

from .._replaced import unprovided

__all__ = ["TestDataSpeed", "PrintData", "BatchData", "BatchDataByShape", "FixedSizeData", "MapData", "MapDataComponent", "RepeatedData", "RepeatedDataPoint", "RandomChooseData", "RandomMixData", "JoinData", "ConcatData", "SelectComponent", "LocallyShuffleData", "CacheData"]

__getattr__ = unprovided(__name__)
