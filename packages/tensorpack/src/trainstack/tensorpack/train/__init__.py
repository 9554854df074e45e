"""tensorpack 0.11's ``tensorpack.train``.

Its names come from ``trainstack.callbacks``, ``trainstack.distributed``, ``trainstack.loop``, ``trainstack.towers``.
"""
from trainstack.callbacks import DEFAULT_CALLBACKS, DEFAULT_MONITORS
from trainstack.distributed import DistributedTrainerParameterServer, DistributedTrainerReplicated, HorovodTrainer
from trainstack.loop import StopTraining, Trainer
from trainstack.towers import (
    AsyncMultiGPUTrainer,
    AutoResumeTrainConfig,
    ModelDesc,
    ModelDescBase,
    NoOpTrainer,
    QueueInputTrainer,
    SimpleTrainer,
    SingleCostTrainer,
    SyncMultiGPUTrainer,
    SyncMultiGPUTrainerParameterServer,
    SyncMultiGPUTrainerReplicated,
    TowerTrainer,
    TrainConfig,
    launch_train_with_config,
)

from .._replaced import unprovided

__all__ = [
    "StopTraining", "Trainer", "TrainConfig", "AutoResumeTrainConfig", "DEFAULT_CALLBACKS", "DEFAULT_MONITORS",
    "launch_train_with_config", "ModelDesc", "ModelDescBase", "SingleCostTrainer", "TowerTrainer", "NoOpTrainer",
    "SimpleTrainer", "QueueInputTrainer", "SyncMultiGPUTrainer", "SyncMultiGPUTrainerReplicated",
    "SyncMultiGPUTrainerParameterServer", "AsyncMultiGPUTrainer", "DistributedTrainerParameterServer",
    "DistributedTrainerReplicated", "HorovodTrainer"
]

__getattr__ = unprovided(__name__)
