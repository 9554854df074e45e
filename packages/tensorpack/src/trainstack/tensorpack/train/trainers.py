"""tensorpack 0.11's ``tensorpack.train.trainers``: its names from ``trainstack.tensorpack.tf1`` (stand-ins
for ``BytePSTrainer``, listed in ``_replaced``)."""
from trainstack.tensorpack.tf1 import (
    AsyncMultiGPUTrainer,
    DistributedTrainerParameterServer,
    DistributedTrainerReplicated,
    HorovodTrainer,
    NoOpTrainer,
    QueueInputTrainer,
    SimpleTrainer,
    SyncMultiGPUTrainer,
    SyncMultiGPUTrainerParameterServer,
    SyncMultiGPUTrainerReplicated,
)

from .._replaced import stand_in_names, unprovided

__all__ = ["NoOpTrainer", "SimpleTrainer", "QueueInputTrainer", "SyncMultiGPUTrainer", "SyncMultiGPUTrainerReplicated", "SyncMultiGPUTrainerParameterServer", "AsyncMultiGPUTrainer", "DistributedTrainerParameterServer", "DistributedTrainerReplicated", "HorovodTrainer"] + stand_in_names(__name__)

__getattr__ = unprovided(__name__)
