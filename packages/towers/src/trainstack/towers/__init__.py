"""trainstack.towers: towers, ModelDesc, single-cost trainers and predictors on TensorFlow 2.

A tower function builds one replicate of the model; trainers call it under a
TowerContext (training towers ``tower0..``, inference towers for predictors),
trace one step function from it, and keep the graph frozen afterwards.
"""
from typing import TYPE_CHECKING

# isort: off
from trainstack.callbacks import tf_startup as _tf_startup  # noqa: F401 - first: TensorFlow without its start-up lines
# isort: on
from trainstack.loop.lazy_exports import lazy_exports

if TYPE_CHECKING:  # the public names; each is imported on its first use (see lazy_exports)
    # Each subpackage imports only those below it: run, trainers, predict, tower | session (.importlinter).
    # -- predictors, inference, SavedModel export, data-parallel inference
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
    from .predict.samples_grid import GeneratorSamplesGrid  # a generator's samples in TensorBoard

    # -- TrainConfig, launch_train_with_config
    from .run import AutoResumeTrainConfig, LoopStateInit, TrainConfig, apply_default_prefetch, launch_train_with_config

    # -- initializers (SessionInit), the runtime config, devices; towers, ModelDesc, gradient processors, steps
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

    # -- trainers, data-parallel trainers
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
    # towers, ModelDesc, gradient processors, the traced step, the single-tower trainers
    "TowerContext", "get_current_tower_context", "TowerFunc", "TowerHandle", "TowerHandles",
    "VariableReuseError", "ModelDescBase", "ModelDesc", "KerasModelDesc", "GradientProcessor", "FilterNoneGrad",
    "GlobalNormClip", "MapGradient", "ScaleGradient", "SummaryGradient", "ProcessedOptimizer",
    "apply_grad_processors", "TracedStep", "RetraceError", "TowerTrainer", "SingleCostTrainer", "StepOptions",
    "SimpleTrainer", "NoOpTrainer", "OnlinePredictor", "check_eager_execution",
    # initializers, the runtime config
    "SessionInit", "JustCurrentSession", "CheckpointInit", "DictRestore", "ChainInit", "SmartInit",
    "InitReport", "ResumeError", "RuntimeConfig",
    # configs
    "TrainConfig", "AutoResumeTrainConfig", "LoopStateInit", "launch_train_with_config",
    "apply_default_prefetch",
    # inference, predictors, export
    "Inferencer", "ScalarStats", "ClassificationError", "BinaryClassificationStats", "InferenceRunner",
    "PredictConfig", "OfflinePredictor", "ModelExporter", "export_saved_model",
    "GeneratorSamplesGrid",
    # several devices
    "MultiGPUTrainerBase", "SyncMultiGPUTrainerReplicated", "SyncMultiGPUTrainerParameterServer",
    "AsyncMultiGPUTrainer", "LeastLoadedPlacement", "DataParallelInferenceRunner",
    "resolve_devices", "logical_cpu_devices",
]

__getattr__, __dir__ = lazy_exports(__name__)
