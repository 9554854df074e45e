"""tensorpack 0.11's ``tensorpack.input_source``: the sources of ``trainstack.inputs`` with tensorpack's
``get_input_tensors()`` (no index: the next tower's)."""
from .._replaced import stand_in_names, unprovided
from .input_source import (
    BatchQueueInput,
    DummyConstantInput,
    FeedfreeInput,
    FeedInput,
    QueueInput,
    StagingInput,
    TensorInput,
    TFDatasetInput,
)
from .input_source_base import InputSource, remap_input_source

__all__ = [
    "FeedInput", "FeedfreeInput", "QueueInput", "BatchQueueInput", "DummyConstantInput", "TensorInput",
    "TFDatasetInput", "StagingInput", "InputSource", "remap_input_source"
]

__all__ += stand_in_names(__name__)

__getattr__ = unprovided(__name__)
