"""The trainers: TowerTrainer, the single-tower trainers and the data-parallel ones.

tensorpack's ``train/`` and ``graph_builder/`` (the multi-GPU builders). The older forms
(``SimpleTrainer(config)``, ...) are ``trainstack.tensorpack``'s trainers'; these refuse them.
"""
from typing import TYPE_CHECKING

from trainstack.loop.lazy_exports import lazy_exports

if TYPE_CHECKING:  # the public names; each is imported on its first use (see lazy_exports)
    from .async_ import AsyncMultiGPUTrainer
    from .multigpu import MultiGPUTrainerBase
    from .parameter_server import SyncMultiGPUTrainer, SyncMultiGPUTrainerParameterServer
    from .placement import LeastLoadedDeviceSetter
    from .replicated import SyncMultiGPUTrainerReplicated
    from .simple import NoOpTrainer, QueueInputTrainer, SimpleTrainer
    from .single_cost import SingleCostTrainer
    from .step_options import StepOptions
    from .tower_trainer import TowerTrainer

__all__ = [
    "StepOptions", "TowerTrainer", "SingleCostTrainer", "SimpleTrainer", "QueueInputTrainer", "NoOpTrainer",
    "MultiGPUTrainerBase", "SyncMultiGPUTrainerReplicated", "SyncMultiGPUTrainerParameterServer",
    "SyncMultiGPUTrainer", "AsyncMultiGPUTrainer", "LeastLoadedDeviceSetter",
]

__getattr__, __dir__ = lazy_exports(__name__)
