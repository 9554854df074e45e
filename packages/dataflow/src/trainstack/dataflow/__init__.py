"""trainstack.dataflow: tensorpack's DataFlow building blocks and multi-process dataflows.

Imports no TensorFlow (only NumPy and msgpack), so that worker processes,
which import it to run a dataflow, start in a fraction of a second. Each name is imported on
its first use (``trainstack.loop.lazy_exports``): a program pays only for the dataflows it uses.
"""
from typing import TYPE_CHECKING

from trainstack.loop.lazy_exports import lazy_exports

if TYPE_CHECKING:  # the public names; each is imported on its first use (see lazy_exports)
    # tensorpack's dataset readers (trainstack.dataflow.dataset) and image grids (viz); OpenCV on first use
    # tensorpack's image augmentors and the dataflows that run them; OpenCV on first use
    from . import dataset, imgaug, viz
    from .base import (
                       DataFlow,
                       DataFlowReentrantGuard,
                       DataFlowTerminated,
                       ProxyDataFlow,
                       RNGDataFlow,
                       fix_rng_seed,
                       get_rng,
    )
    from .batch_by_shape import BatchDataByShape
    from .common import (
                       BatchData,
                       CacheData,
                       ConcatData,
                       FixedSizeData,
                       JoinData,
                       LocallyShuffleData,
                       MapData,
                       MapDataComponent,
                       PrintData,
                       RepeatedData,
                       RepeatedDataPoint,
                       SelectComponent,
    )
    from .errors import EmptyDataFlowError, FrameError, InputError, InputWorkerError

    # stored formats and tensorpack's ZeroMQ remote dataflow (lmdb, h5py, pyzmq, TensorFlow imported when used)
    from .format import CaffeLMDB, HDF5Data, LMDBData, LMDBDataDecoder, SVMLightData
    from .image import AugmentImageComponent, AugmentImageComponents, AugmentImageCoordinates, ImageFromFile
    from .map_and_batch import MultiProcessMapAndBatchData, MultiProcessMapAndBatchDataZMQ
    from .mixing import RandomChooseData, RandomMixData

    # worker processes (msgpack frames, see trainstack.dataflow.codec)
    from .parallel import (
                       MultiProcessDataFlow,
                       MultiProcessPrefetchData,
                       MultiProcessRunner,
                       MultiProcessRunnerZMQ,
                       PrefetchData,
                       PrefetchDataZMQ,
    )
    from .parallel_map import MultiProcessMapData, MultiProcessMapDataZMQ, MultiThreadMapData
    from .protocol import dataflow_len_or_none, dataflow_size, numbered_passes, repeat_passes, reset_dataflow
    from .raw import DataFromGenerator, DataFromIterable, DataFromList, DataFromQueue, FakeData
    from .remote_zmq import RemoteDataZMQ, send_dataflow_zmq
    from .serialize import HDF5Serializer, LMDBSerializer, NumpySerializer, TFRecordSerializer
    from .speed import TestDataSpeed
    from .threads import MultiThreadPrefetchData, MultiThreadRunner

__all__ = [
    "DataFlow", "ProxyDataFlow", "RNGDataFlow", "DataFlowReentrantGuard", "DataFlowTerminated",
    "get_rng", "fix_rng_seed",
    "DataFromList", "DataFromGenerator", "DataFromIterable", "FakeData",
    "BatchData", "MapData", "MapDataComponent", "SelectComponent", "RepeatedData", "RepeatedDataPoint",
    "FixedSizeData", "ConcatData", "JoinData", "LocallyShuffleData", "CacheData", "PrintData",
    "dataflow_size", "dataflow_len_or_none", "reset_dataflow", "repeat_passes", "numbered_passes",
    "InputError", "EmptyDataFlowError", "InputWorkerError", "FrameError",
    # worker processes
    "MultiProcessDataFlow", "MultiProcessRunner", "MultiProcessRunnerZMQ", "PrefetchData",
    "PrefetchDataZMQ", "MultiProcessPrefetchData",
    "MultiProcessMapData", "MultiProcessMapDataZMQ", "MultiThreadMapData",
    "MultiProcessMapAndBatchData", "MultiProcessMapAndBatchDataZMQ",
    # tensorpack 0.11's remaining dataflows
    "DataFromQueue", "BatchDataByShape", "RandomChooseData", "RandomMixData", "TestDataSpeed",
    "MultiThreadRunner", "MultiThreadPrefetchData",
    "HDF5Data", "LMDBData", "LMDBDataDecoder", "CaffeLMDB", "SVMLightData",
    "LMDBSerializer", "NumpySerializer", "TFRecordSerializer", "HDF5Serializer",
    "RemoteDataZMQ", "send_dataflow_zmq",
    # datasets, visualization
    "dataset", "viz",
    # image augmentors
    "imgaug", "AugmentImageComponent", "AugmentImageComponents", "AugmentImageCoordinates", "ImageFromFile",
]

__getattr__, __dir__ = lazy_exports(__name__)
