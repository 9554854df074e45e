"""tensorpack 0.11's ``tensorpack.input_source.input_source``: the sources of ``trainstack.inputs``, each
with tensorpack's ``get_input_tensors()`` without an index (the next tower's, see ``input_source_base``);
stand-ins for ``PlaceholderInput``, ``ZMQInput``, listed in ``_replaced``."""
from __future__ import annotations

from trainstack import inputs

from .._replaced import stand_in_names, unprovided
from .input_source_base import InputSource

__all__ = ["FeedInput", "FeedfreeInput", "QueueInput", "BatchQueueInput", "DummyConstantInput", "TensorInput",
           "TFDatasetInput", "StagingInput"] + stand_in_names(__name__)


class FeedInput(InputSource, inputs.FeedInput):
    """tensorpack's ``FeedInput``: :class:`trainstack.inputs.FeedInput`, ``get_input_tensors()`` as tensorpack's."""


class FeedfreeInput(InputSource, inputs.FeedfreeInput):
    """tensorpack's ``FeedfreeInput``: :class:`trainstack.inputs.FeedfreeInput`, ``get_input_tensors()`` as
    tensorpack's."""


class QueueInput(FeedfreeInput, inputs.QueueInput):
    """tensorpack's ``QueueInput``: :class:`trainstack.inputs.QueueInput`, ``get_input_tensors()`` as tensorpack's."""


class BatchQueueInput(FeedfreeInput, inputs.BatchQueueInput):
    """tensorpack's ``BatchQueueInput``: :class:`trainstack.inputs.BatchQueueInput`, ``get_input_tensors()`` as
    tensorpack's."""


class TensorInput(FeedfreeInput, inputs.TensorInput):
    """tensorpack's ``TensorInput``: :class:`trainstack.inputs.TensorInput`, ``get_input_tensors()`` as
    tensorpack's."""


class DummyConstantInput(TensorInput, inputs.DummyConstantInput):
    """tensorpack's ``DummyConstantInput``: :class:`trainstack.inputs.DummyConstantInput`, ``get_input_tensors()``
    as tensorpack's."""


class TFDatasetInput(FeedfreeInput, inputs.TFDatasetInput):
    """tensorpack's ``TFDatasetInput``: :class:`trainstack.inputs.TFDatasetInput`, ``get_input_tensors()`` as
    tensorpack's."""


class StagingInput(FeedfreeInput, inputs.StagingInput):
    """tensorpack's ``StagingInput``: :class:`trainstack.inputs.StagingInput`, ``get_input_tensors()`` as
    tensorpack's."""


__getattr__ = unprovided(__name__)
