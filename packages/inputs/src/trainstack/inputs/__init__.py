"""trainstack.inputs: InputSources, everything that brings data into the step function."""
from typing import TYPE_CHECKING

# isort: off
from trainstack.callbacks import tf_startup as _tf_startup  # noqa: F401 - first: TensorFlow without its start-up lines
# isort: on
from trainstack.loop.lazy_exports import lazy_exports

if TYPE_CHECKING:  # the public names; each is imported on its first use (see lazy_exports)
    from .base import FeedfreeInput, InputSource

    # feedfree sources: batch queue, tf.data, staging, tensors
    from .batchqueue import BatchQueueInput
    from .dataflow import dataflow_size, numbered_passes, repeat_passes, reset_dataflow
    from .dataset import TFDatasetInput, dataflow_to_dataset
    from .errors import EmptyDataFlowError, FrameError, InputError, InputSignatureError, InputWorkerError
    from .feed import FeedInput

    # multi-process and remote inputs, msgpack frames
    from .multiprocess import MultiProcessDataFlow, MultiProcessInput
    from .queue import QueueInput
    from .reader import InputReader
    from .remote import RemoteDataFlow, RemoteInput
    from .remote_server import DataFlowServer, serve_dataflow
    from .signature import DatapointCheck, check_datapoint, check_datapoint_at, check_tensors, normalize_signature
    from .staging import StagingInput
    from .tensor import DummyConstantInput, TensorInput

__all__ = [
    "InputSource", "FeedfreeInput", "FeedInput", "QueueInput", "InputReader",
    "dataflow_size", "numbered_passes", "repeat_passes", "reset_dataflow",
    "DatapointCheck", "check_datapoint", "check_datapoint_at", "check_tensors", "normalize_signature",
    "InputError", "InputSignatureError", "EmptyDataFlowError", "InputWorkerError", "FrameError",
    # feedfree sources: batch queue, tf.data, staging, tensors
    "BatchQueueInput", "TFDatasetInput", "dataflow_to_dataset", "StagingInput", "TensorInput",
    "DummyConstantInput",
    # multi-process and remote inputs, msgpack frames
    "MultiProcessDataFlow", "MultiProcessInput", "serve_dataflow", "DataFlowServer", "RemoteDataFlow",
    "RemoteInput",
]

__getattr__, __dir__ = lazy_exports(__name__)
