"""tensorpack 0.11's ``tensorpack.input_source.input_source``: its names from ``trainstack.inputs`` (stand-ins
for ``PlaceholderInput``, ``ZMQInput``, listed in ``_replaced``)."""
from trainstack.inputs import (
    BatchQueueInput,
    DummyConstantInput,
    FeedfreeInput,
    FeedInput,
    QueueInput,
    StagingInput,
    TensorInput,
    TFDatasetInput,
)

from .._replaced import stand_in_names, unprovided

__all__ = ["FeedInput", "FeedfreeInput", "QueueInput", "BatchQueueInput", "DummyConstantInput", "TensorInput", "TFDatasetInput", "StagingInput"] + stand_in_names(__name__)

__getattr__ = unprovided(__name__)
