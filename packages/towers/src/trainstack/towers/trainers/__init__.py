"""The trainers: TowerTrainer, the single-tower trainers and the data-parallel ones.

tensorpack's ``train/`` and ``graph_builder/`` (the multi-GPU builders). The older forms
(``SimpleTrainer(config)``, ...) are ``trainstack.tensorpack``'s trainers'; these refuse them.
"""
from typing import TYPE_CHECKING

from trainstack.loop.lazy_exports import lazy_exports

if TYPE_CHECKING:  # the public names; each is imported on its first use (see lazy_exports)
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

__getattr__, __dir__ = lazy_exports(__name__)
