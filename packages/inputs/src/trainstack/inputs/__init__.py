"""trainstack.inputs: InputSources, everything that brings data into the step function."""
from .base import FeedfreeInput, InputSource
from .dataflow import dataflow_size, repeat_passes, reset_dataflow
from .errors import EmptyDataFlowError, FrameError, InputError, InputSignatureError, InputWorkerError
from .feed import FeedInput
from .queue import QueueInput
from .reader import InputReader
from .signature import check_datapoint, check_tensors, normalize_signature

__all__ = [
    "InputSource", "FeedfreeInput", "FeedInput", "QueueInput", "InputReader",
    "dataflow_size", "repeat_passes", "reset_dataflow",
    "check_datapoint", "check_tensors", "normalize_signature",
    "InputError", "InputSignatureError", "EmptyDataFlowError", "InputWorkerError", "FrameError",
]
