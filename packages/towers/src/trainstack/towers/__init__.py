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
    # Each subpackage imports only those listed before it (.importlinter checks it).
    # -- towers, ModelDesc, gradient processors, the traced step (H3)
    # -- predictors, inference, SavedModel export (H5); data-parallel inference (issue 6)
    from .predict import (
                        BinaryClassificationStats,
                        ClassificationError,
                        DataParallelInferenceRunner,
                        DatasetPredictorBase,
                        Inferencer,
                        InferenceRunner,
                        ModelExporter,
                        OfflinePredictor,
                        OnlinePredictor,
                        PredictConfig,
                        ScalarStats,
                        SimpleDatasetPredictor,
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
                        SaverRestore,
                        SaverRestoreRelaxed,
                        SessionInit,
                        SmartInit,
                        get_model_loader,
                        logical_cpu_devices,
                        reject_session_args,
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
                        LeastLoadedDeviceSetter,
                        MultiGPUTrainerBase,
                        NoOpTrainer,
                        QueueInputTrainer,
                        SimpleTrainer,
                        SingleCostTrainer,
                        StepOptions,
                        SyncMultiGPUTrainer,
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
    "SimpleTrainer", "QueueInputTrainer", "NoOpTrainer", "OnlinePredictor",
    # init (H4)
    "SessionInit", "JustCurrentSession", "CheckpointInit", "SaverRestore", "SaverRestoreRelaxed",
    "DictRestore", "ChainInit", "SmartInit", "get_model_loader", "InitReport", "ResumeError", "RuntimeConfig",
    "reject_session_args",
    # config (H6)
    "TrainConfig", "AutoResumeTrainConfig", "LoopStateInit", "launch_train_with_config",
    "apply_default_prefetch",
    # inference (H5)
    "Inferencer", "ScalarStats", "ClassificationError", "BinaryClassificationStats", "InferenceRunner",
    "PredictConfig", "OfflinePredictor", "ModelExporter", "export_saved_model",
    "GeneratorSamplesGrid",
    # multi-GPU (issue 6)
    "MultiGPUTrainerBase", "SyncMultiGPUTrainerReplicated", "SyncMultiGPUTrainerParameterServer",
    "SyncMultiGPUTrainer", "AsyncMultiGPUTrainer", "LeastLoadedDeviceSetter", "DataParallelInferenceRunner",
    "resolve_devices", "logical_cpu_devices",
    # porting tensorpack scripts (issue 13)
    "SimpleDatasetPredictor", "DatasetPredictorBase", "check_eager_execution",
]

__getattr__, __dir__ = lazy_exports(__name__)
