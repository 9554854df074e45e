"""trainstack.towers: towers, ModelDesc, single-cost trainers and predictors on TensorFlow 2.

A tower function builds one replicate of the model; trainers call it under a
TowerContext (training towers ``tower0..``, inference towers for predictors),
trace one step function from it, and keep the graph frozen afterwards.
"""
# -- core (H3): towers, ModelDesc, gradient processors, steps, trainers, predictors
from .gradproc import (FilterNoneGrad, GlobalNormClip, GradientProcessor, MapGradient,
                       ProcessedOptimizer, ScaleGradient, SummaryGradient, apply_grad_processors)
from .model_desc import ModelDesc, ModelDescBase
from .predictor import OnlinePredictor
from .simple import NoOpTrainer, QueueInputTrainer, SimpleTrainer
from .step import RetraceError, TracedStep
from .tower import (TowerContext, TowerFunc, TowerHandle, TowerHandles, VariableReuseError,
                    get_current_tower_context)
from .trainer import SingleCostTrainer, TowerTrainer

# -- init (H4): initializers (SessionInit) and the runtime config
from .runtime import RuntimeConfig, reject_session_args
from .sessinit import (ChainInit, CheckpointInit, DictRestore, InitReport, JustCurrentSession, SaverRestore,
                       SaverRestoreRelaxed, SessionInit, SmartInit, get_model_loader)

# -- config (H6): TrainConfig, launch_train_with_config, the older (003) API
from .compat import (FeedfreeTrainerBase, SimpleFeedfreeTrainer, SingleCostFeedfreeTrainer,
                     legacy_get_predictor)
from .config import AutoResumeTrainConfig, LoopStateInit, TrainConfig
from .launch import apply_default_prefetch, launch_train_with_config

# -- inference (H5): inferencers, InferenceRunner, offline predictors, SavedModel export
from .export import ModelExporter, export_saved_model
from .inference import BinaryClassificationStats, ClassificationError, Inferencer, ScalarStats
from .inference_runner import InferenceRunner
from .predict_config import OfflinePredictor, PredictConfig

# -- multi-GPU (issue 6): data-parallel trainers, devices, data-parallel inference
from .async_ import AsyncMultiGPUTrainer
from .data_parallel_inference import DataParallelInferenceRunner
from .devices import logical_cpu_devices, resolve_devices
from .multigpu import MultiGPUTrainerBase, SyncMultiGPUTrainer
from .parameter_server import LeastLoadedDeviceSetter, SyncMultiGPUTrainerParameterServer
from .replicated import SyncMultiGPUTrainerReplicated

__all__ = [
    # core (H3)
    "TowerContext", "get_current_tower_context", "TowerFunc", "TowerHandle", "TowerHandles",
    "VariableReuseError", "ModelDescBase", "ModelDesc", "GradientProcessor", "FilterNoneGrad",
    "GlobalNormClip", "MapGradient", "ScaleGradient", "SummaryGradient", "ProcessedOptimizer",
    "apply_grad_processors", "TracedStep", "RetraceError", "TowerTrainer", "SingleCostTrainer",
    "SimpleTrainer", "QueueInputTrainer", "NoOpTrainer", "OnlinePredictor",
    # init (H4)
    "SessionInit", "JustCurrentSession", "CheckpointInit", "SaverRestore", "SaverRestoreRelaxed",
    "DictRestore", "ChainInit", "SmartInit", "get_model_loader", "InitReport", "RuntimeConfig",
    "reject_session_args",
    # config (H6)
    "TrainConfig", "AutoResumeTrainConfig", "LoopStateInit", "launch_train_with_config",
    "apply_default_prefetch", "FeedfreeTrainerBase", "SingleCostFeedfreeTrainer",
    "SimpleFeedfreeTrainer", "legacy_get_predictor",
    # inference (H5)
    "Inferencer", "ScalarStats", "ClassificationError", "BinaryClassificationStats", "InferenceRunner",
    "PredictConfig", "OfflinePredictor", "ModelExporter", "export_saved_model",
    # multi-GPU (issue 6)
    "MultiGPUTrainerBase", "SyncMultiGPUTrainerReplicated", "SyncMultiGPUTrainerParameterServer",
    "SyncMultiGPUTrainer", "AsyncMultiGPUTrainer", "LeastLoadedDeviceSetter", "DataParallelInferenceRunner",
    "resolve_devices", "logical_cpu_devices",
]
