"""The trainers: TowerTrainer, the single-tower trainers and the data-parallel ones.

tensorpack's ``train/`` and ``graph_builder/`` (the multi-GPU builders). The older
forms (``SimpleTrainer(config)``, ...) reach :mod:`trainstack.towers.legacy` through
:mod:`~trainstack.towers.trainers.legacy_hook`, without importing it.
"""
from .trainer import SingleCostTrainer, TowerTrainer
from .simple import NoOpTrainer, QueueInputTrainer, SimpleTrainer
from .multigpu import MultiGPUTrainerBase
from .placement import LeastLoadedDeviceSetter
from .parameter_server import SyncMultiGPUTrainer, SyncMultiGPUTrainerParameterServer
from .replicated import SyncMultiGPUTrainerReplicated
from .async_ import AsyncMultiGPUTrainer

__all__ = [
    "TowerTrainer", "SingleCostTrainer", "SimpleTrainer", "QueueInputTrainer", "NoOpTrainer",
    "MultiGPUTrainerBase", "SyncMultiGPUTrainerReplicated", "SyncMultiGPUTrainerParameterServer",
    "SyncMultiGPUTrainer", "AsyncMultiGPUTrainer", "LeastLoadedDeviceSetter",
]
