"""trainstack.dataflow: tensorpack's DataFlow building blocks and multi-process dataflows.

Imports no TensorFlow (only NumPy and msgpack), so that worker processes,
which import it to run a dataflow, start in a fraction of a second.
"""
from .base import (DataFlow, DataFlowReentrantGuard, DataFlowTerminated, ProxyDataFlow, RNGDataFlow,
                   fix_rng_seed, get_rng)
from .common import (BatchData, CacheData, ConcatData, FixedSizeData, JoinData, LocallyShuffleData, MapData,
                     MapDataComponent, PrintData, RepeatedData, RepeatedDataPoint, SelectComponent)
from .errors import EmptyDataFlowError, FrameError, InputError, InputWorkerError
from .protocol import dataflow_len_or_none, dataflow_size, numbered_passes, repeat_passes, reset_dataflow
from .raw import DataFromGenerator, DataFromIterable, DataFromList, FakeData

# worker processes (msgpack frames, see trainstack.dataflow.codec)
from .parallel import (MultiProcessDataFlow, MultiProcessPrefetchData, MultiProcessRunner,
                       MultiProcessRunnerZMQ, PrefetchData, PrefetchDataZMQ)
from .parallel_map import MultiProcessMapData, MultiProcessMapDataZMQ, MultiThreadMapData

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
]
