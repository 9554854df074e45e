"""The trainers: TowerTrainer, the single-tower trainers and the data-parallel ones.

tensorpack's ``train/`` and ``graph_builder/`` (the multi-GPU builders). The older forms
(``SimpleTrainer(config)``, ...) are ``trainstack.tensorpack``'s trainers'; these refuse them.
"""
from .async_ import AsyncMultiGPUTrainer
from .multigpu import MultiGPUTrainerBase
from .parameter_server import SyncMultiGPUTrainerParameterServer
from .placement import LeastLoadedPlacement
from .replicated import SyncMultiGPUTrainerReplicated
from .simple import NoOpTrainer, SimpleTrainer
from .single_cost import SingleCostTrainer
from .step_options import StepOptions
from .tower_trainer import TowerTrainer

__all__ = [
    "StepOptions", "TowerTrainer", "SingleCostTrainer", "SimpleTrainer", "NoOpTrainer",
    "MultiGPUTrainerBase", "SyncMultiGPUTrainerReplicated", "SyncMultiGPUTrainerParameterServer",
    "AsyncMultiGPUTrainer", "LeastLoadedPlacement",
]
