"""trainstack.towers: towers, ModelDesc, single-cost trainers and predictors on TensorFlow 2.

A tower function builds one replicate of the model; trainers call it under a
TowerContext (training towers ``tower0..``, inference towers for predictors),
trace one step function from it, and keep the graph frozen afterwards.
"""
# isort: off
from trainstack.callbacks import tf_startup as _tf_startup  # noqa: F401 - first: TensorFlow without its start-up lines
# isort: on
# Each subpackage imports only those listed before it (.importlinter checks it).
# -- towers, ModelDesc, gradient processors, the traced step (H3)
# -- predictors, inference, SavedModel export (H5); data-parallel inference (issue 6)
from .predict import (
                    BinaryClassificationStats,
                    ClassificationError,
                    DataParallelInferenceRunner,
                    Inferencer,
                    InferenceRunner,
                    ModelExporter,
                    OfflinePredictor,
                    OnlinePredictor,
                    PredictConfig,
                    ScalarStats,
                    export_saved_model,
)
from .predict.samples_grid import GeneratorSamplesGrid  # a generator's samples in TensorBoard (issue 26)

# -- TrainConfig, launch_train_with_config (H6)
from .run import AutoResumeTrainConfig, LoopStateInit, TrainConfig, apply_default_prefetch, launch_train_with_config

# -- initializers (SessionInit), the runtime config (H4), devices (issue 6)
from .session import (
                    ChainInit,
                    CheckpointInit,
                    DictRestore,
                    InitReport,
                    JustCurrentSession,
                    ResumeError,
                    RuntimeConfig,
                    SessionInit,
                    SmartInit,
                    logical_cpu_devices,
                    resolve_devices,
)
from .tower import (
                    FilterNoneGrad,
                    GlobalNormClip,
                    GradientProcessor,
                    KerasModelDesc,
                    MapGradient,
                    ModelDesc,
                    ModelDescBase,
                    ProcessedOptimizer,
                    RetraceError,
                    ScaleGradient,
                    SummaryGradient,
                    TowerContext,
                    TowerFunc,
                    TowerHandle,
                    TowerHandles,
                    TracedStep,
                    VariableReuseError,
                    apply_grad_processors,
                    check_eager_execution,
                    get_current_tower_context,
)

# -- trainers (H3), data-parallel trainers (issue 6)
from .trainers import (
                    AsyncMultiGPUTrainer,
                    LeastLoadedPlacement,
                    MultiGPUTrainerBase,
                    NoOpTrainer,
                    SimpleTrainer,
                    SingleCostTrainer,
                    StepOptions,
                    SyncMultiGPUTrainerParameterServer,
                    SyncMultiGPUTrainerReplicated,
                    TowerTrainer,
)

__all__ = [
    # core (H3)
    "TowerContext", "get_current_tower_context", "TowerFunc", "TowerHandle", "TowerHandles",
    "VariableReuseError", "ModelDescBase", "ModelDesc", "KerasModelDesc", "GradientProcessor", "FilterNoneGrad",
    "GlobalNormClip", "MapGradient", "ScaleGradient", "SummaryGradient", "ProcessedOptimizer",
    "apply_grad_processors", "TracedStep", "RetraceError", "TowerTrainer", "SingleCostTrainer", "StepOptions",
    "SimpleTrainer", "NoOpTrainer", "OnlinePredictor",
    # init (H4)
    "SessionInit", "JustCurrentSession", "CheckpointInit", "DictRestore", "ChainInit", "SmartInit",
    "InitReport", "ResumeError", "RuntimeConfig",
    # config (H6)
    "TrainConfig", "AutoResumeTrainConfig", "LoopStateInit", "launch_train_with_config",
    "apply_default_prefetch",
    # inference (H5)
    "Inferencer", "ScalarStats", "ClassificationError", "BinaryClassificationStats", "InferenceRunner",
    "PredictConfig", "OfflinePredictor", "ModelExporter", "export_saved_model",
    "GeneratorSamplesGrid",
    # multi-GPU (issue 6)
    "MultiGPUTrainerBase", "SyncMultiGPUTrainerReplicated", "SyncMultiGPUTrainerParameterServer",
    "AsyncMultiGPUTrainer", "LeastLoadedPlacement", "DataParallelInferenceRunner",
    "resolve_devices", "logical_cpu_devices",
    # porting tensorpack scripts (issue 13)
    "check_eager_execution",
]
