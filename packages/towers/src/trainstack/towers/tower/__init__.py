"""Building a tower: TowerContext/TowerFunc, ModelDesc, gradient processors, the traced step.

The bottom of trainstack.towers (tensorpack's ``tfutils/tower.py``, ``graph_builder/``
and ``ModelDesc``): what trainers and predictors build their graphs from.
"""
from .context import TowerContext, get_current_tower_context
from .eager import check_eager_execution
from .gradproc import (
                    FilterNoneGrad,
                    GlobalNormClip,
                    GradientProcessor,
                    MapGradient,
                    ProcessedOptimizer,
                    ScaleGradient,
                    SummaryGradient,
                    apply_grad_processors,
)
from .handles import TowerHandle, TowerHandles
from .keras_model import KerasModelDesc
from .model_desc import ModelDesc, ModelDescBase
from .step import RetraceError, TracedStep
from .tower import TowerFunc, VariableReuseError

__all__ = [
    "TowerContext", "get_current_tower_context", "TowerFunc", "TowerHandle", "TowerHandles",
    "VariableReuseError", "TracedStep", "RetraceError", "ModelDescBase", "ModelDesc", "KerasModelDesc",
    "GradientProcessor", "FilterNoneGrad", "GlobalNormClip", "MapGradient", "ScaleGradient",
    "SummaryGradient", "ProcessedOptimizer", "apply_grad_processors", "check_eager_execution",
]
