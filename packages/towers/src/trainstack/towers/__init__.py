"""trainstack.towers: towers, ModelDesc, single-cost trainers and predictors on TensorFlow 2.

A tower function builds one replicate of the model; trainers call it under a
TowerContext (training towers ``tower0..``, inference towers for predictors),
trace one step function from it, and keep the graph frozen afterwards.
"""
# isort: off
import trainstack.callbacks.tf_startup  # noqa: F401 - first: imports TensorFlow without its start-up lines
# isort: on
# Each subpackage imports only those listed before it (.importlinter checks it); tf1, the room
# of tensorpack's TF1 world (and its older trainer API), comes last and plugs into the core below.
# -- towers, ModelDesc, gradient processors, the traced step (H3)
# -- the room of tensorpack's TF1 world: its graph-side helpers, custom trainers' graph building,
#    TF1 calls that fail clearly, tensorpack's aliases and the older (003) API (issue 32)
from . import tf1

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

# tensorpack.models' layer functions, argscope, varreplace (issue 24): TF1 variables in a tower
from .tf1 import (
                    AvgPooling,
                    BatchNorm,
                    BatchRenorm,
                    BNReLU,
                    ConcatWith,
                    Conv2D,
                    Conv2DTranspose,
                    DataParallelBuilder,
                    Deconv2D,
                    Dropout,
                    FeedfreeTrainerBase,
                    FixedUnPooling,
                    FullyConnected,
                    GlobalAvgPooling,
                    GraphBuildError,
                    GraphOp,
                    InstanceNorm,
                    KerasPhaseCallback,
                    LayerNorm,
                    LinearWrap,
                    Maxout,
                    MaxPooling,
                    PReLU,
                    SimpleFeedfreeTrainer,
                    SingleCostFeedfreeTrainer,
                    TF1CallError,
                    VariableHolder,
                    add_param_summary,
                    argscope,
                    auto_reuse_variable_scope,
                    custom_getter_scope,
                    disable_layer_logging,
                    enable_argscope_for_function,
                    enable_argscope_for_module,
                    freeze_variables,
                    get_arg_scope,
                    get_global_step_var,
                    get_num_gpu,
                    l1_regularizer,
                    l2_regularizer,
                    layer_register,
                    legacy_get_predictor,
                    minimize,
                    regularize_cost,
                    remap_variables,
                    tfv1,
                    under_variable_scope,
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
                    SyncMultiGPUTrainer,
                    SyncMultiGPUTrainerParameterServer,
                    SyncMultiGPUTrainerReplicated,
                    TowerTrainer,
)

# The core's extension points (tower/extension.py, trainers/legacy_hook.py) call the room from
# here on; nothing in TensorFlow or Keras is replaced until a tower is traced (tf1/switch.py).
tf1.register()

__all__ = [
    # core (H3)
    "TowerContext", "get_current_tower_context", "TowerFunc", "TowerHandle", "TowerHandles",
    "VariableReuseError", "ModelDescBase", "ModelDesc", "KerasModelDesc", "GradientProcessor", "FilterNoneGrad",
    "GlobalNormClip", "MapGradient", "ScaleGradient", "SummaryGradient", "ProcessedOptimizer",
    "apply_grad_processors", "TracedStep", "RetraceError", "TowerTrainer", "SingleCostTrainer",
    "SimpleTrainer", "QueueInputTrainer", "NoOpTrainer", "OnlinePredictor", "minimize", "GraphOp",
    "GraphBuildError",
    # init (H4)
    "SessionInit", "JustCurrentSession", "CheckpointInit", "SaverRestore", "SaverRestoreRelaxed",
    "DictRestore", "ChainInit", "SmartInit", "get_model_loader", "InitReport", "ResumeError", "RuntimeConfig",
    "reject_session_args",
    # config (H6)
    "TrainConfig", "AutoResumeTrainConfig", "LoopStateInit", "launch_train_with_config",
    "apply_default_prefetch", "FeedfreeTrainerBase", "SingleCostFeedfreeTrainer",
    "SimpleFeedfreeTrainer", "legacy_get_predictor",
    # inference (H5)
    "Inferencer", "ScalarStats", "ClassificationError", "BinaryClassificationStats", "InferenceRunner",
    "PredictConfig", "OfflinePredictor", "ModelExporter", "export_saved_model",
    "GeneratorSamplesGrid",
    # multi-GPU (issue 6)
    "MultiGPUTrainerBase", "SyncMultiGPUTrainerReplicated", "SyncMultiGPUTrainerParameterServer",
    "SyncMultiGPUTrainer", "AsyncMultiGPUTrainer", "LeastLoadedDeviceSetter", "DataParallelInferenceRunner",
    "resolve_devices", "logical_cpu_devices",
    # porting tensorpack scripts (issue 13)
    "regularize_cost", "l2_regularizer", "l1_regularizer", "add_param_summary", "get_global_step_var",
    "SimpleDatasetPredictor", "DatasetPredictorBase", "DataParallelBuilder", "check_eager_execution",
    "TF1CallError", "tfv1", "get_num_gpu", "KerasPhaseCallback", "auto_reuse_variable_scope", "under_variable_scope",
    # tensorpack's layer functions (issue 24)
    "Conv2D", "Conv2DTranspose", "Deconv2D", "FullyConnected", "BatchNorm", "BatchRenorm", "LayerNorm", "InstanceNorm",
    "MaxPooling", "AvgPooling", "GlobalAvgPooling", "FixedUnPooling", "Dropout", "BNReLU", "PReLU", "Maxout",
    "ConcatWith", "LinearWrap", "layer_register", "VariableHolder", "disable_layer_logging", "argscope",
    "get_arg_scope", "enable_argscope_for_function", "enable_argscope_for_module", "custom_getter_scope",
    "remap_variables", "freeze_variables",
]
