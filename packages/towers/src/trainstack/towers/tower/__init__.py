"""Building a tower: TowerContext/TowerFunc, ModelDesc, gradient processors, the traced step.

The bottom of trainstack.towers (tensorpack's ``tfutils/tower.py``, ``graph_builder/``
and ``ModelDesc``): what trainers and predictors build their graphs from.
"""
from .tower import (TowerContext, TowerFunc, TowerHandle, TowerHandles, VariableReuseError,
                    get_current_tower_context)
from .step import RetraceError, TracedStep
from .model_desc import ModelDesc, ModelDescBase
from .gradproc import (FilterNoneGrad, GlobalNormClip, GradientProcessor, MapGradient,
                       ProcessedOptimizer, ScaleGradient, SummaryGradient, apply_grad_processors)
from .graph_build import GraphBuildError, GraphOp, minimize
from .tf1_guard import TF1CallError, check_eager_execution

__all__ = [
    "TowerContext", "get_current_tower_context", "TowerFunc", "TowerHandle", "TowerHandles",
    "VariableReuseError", "TracedStep", "RetraceError", "ModelDescBase", "ModelDesc",
    "GradientProcessor", "FilterNoneGrad", "GlobalNormClip", "MapGradient", "ScaleGradient",
    "SummaryGradient", "ProcessedOptimizer", "apply_grad_processors", "minimize", "GraphOp",
    "GraphBuildError", "TF1CallError", "check_eager_execution",
]
