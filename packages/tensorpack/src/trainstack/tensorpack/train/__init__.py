"""tensorpack 0.11's ``tensorpack.train``.

Its names come from ``trainstack.callbacks``, ``trainstack.loop``, ``trainstack.towers``; the model
and trainer classes are ``trainstack.tensorpack.tf1``'s (the core's, with the TF1 room's overrides).
"""
from trainstack.callbacks import DEFAULT_CALLBACKS, DEFAULT_MONITORS
from trainstack.loop import StopTraining, Trainer
from trainstack.tensorpack.tf1 import (
    AsyncMultiGPUTrainer,
    AutoResumeTrainConfig,
    DistributedTrainerParameterServer,
    DistributedTrainerReplicated,
    HorovodTrainer,
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
)
from trainstack.towers import launch_train_with_config

from .._replaced import stand_in_names, unprovided

__all__ = [
    "StopTraining", "Trainer", "TrainConfig", "AutoResumeTrainConfig", "DEFAULT_CALLBACKS", "DEFAULT_MONITORS",
    "launch_train_with_config", "ModelDesc", "ModelDescBase", "SingleCostTrainer", "TowerTrainer", "NoOpTrainer",
    "SimpleTrainer", "QueueInputTrainer", "SyncMultiGPUTrainer", "SyncMultiGPUTrainerReplicated",
    "SyncMultiGPUTrainerParameterServer", "AsyncMultiGPUTrainer", "DistributedTrainerParameterServer",
    "DistributedTrainerReplicated", "HorovodTrainer"
]

__all__ += stand_in_names(__name__)

__getattr__ = unprovided(__name__)
