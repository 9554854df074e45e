"""tensorpack 0.11's top level, ``import tensorpack``: the names ``from tensorpack import *`` gives,
re-exported from this package's mirrors of tensorpack's modules (the last star import winning, as there).

They are loaded on first use (``_star.py`` holds the imports), so that ``import
trainstack.tensorpack.utils.viz`` or the port command (``python -m trainstack.tensorpack.port``)
does not import TensorFlow; ``from trainstack.tensorpack import *`` loads them all.
"""
from typing import Any as _Any

from ._replaced import stand_in_names as _stand_in_names
from ._replaced import unprovided as _unprovided_in

#: the names ``_star`` provides
_STAR = [
    "get_rng", "fix_rng_seed", "logger", "DataFlow", "ProxyDataFlow", "RNGDataFlow", "DataFlowTerminated",
    "TestDataSpeed", "PrintData", "BatchData", "BatchDataByShape", "FixedSizeData", "MapData", "MapDataComponent",
    "RepeatedData", "RepeatedDataPoint", "RandomChooseData", "RandomMixData", "JoinData", "ConcatData",
    "SelectComponent", "LocallyShuffleData", "CacheData", "HDF5Data", "LMDBData", "LMDBDataDecoder", "CaffeLMDB",
    "SVMLightData", "ImageFromFile", "AugmentImageComponent", "AugmentImageCoordinates", "AugmentImageComponents",
    "PrefetchData", "MultiProcessPrefetchData", "MultiProcessRunner", "MultiProcessRunnerZMQ", "MultiThreadRunner",
    "PrefetchDataZMQ", "MultiThreadPrefetchData", "MultiThreadMapData", "MultiProcessMapData",
    "MultiProcessMapDataZMQ", "MultiProcessMapAndBatchData", "MultiProcessMapAndBatchDataZMQ", "FakeData",
    "DataFromQueue", "DataFromList", "DataFromGenerator", "DataFromIterable", "send_dataflow_zmq", "RemoteDataZMQ",
    "LMDBSerializer", "NumpySerializer", "TFRecordSerializer", "HDF5Serializer", "imgaug", "dataset", "BatchNorm",
    "BatchRenorm", "layer_register", "rename_tflayer_get_variable", "StaticDynamicAxis", "DynamicLazyAxis",
    "StaticLazyAxis", "StaticDynamicShape", "VariableHolder", "disable_layer_logging", "Conv2D", "Deconv2D",
    "Conv2DTranspose", "FullyConnected", "LayerNorm", "InstanceNorm", "LinearWrap", "Maxout", "PReLU", "BNReLU",
    "MaxPooling", "FixedUnPooling", "AvgPooling", "GlobalAvgPooling", "regularize_cost", "l2_regularizer",
    "l1_regularizer", "Dropout", "ConcatWith", "Callback", "ProxyCallback", "CallbackFactory", "RunOp",
    "RunUpdateOps", "ProcessTensors", "DumpTensors", "DumpTensor", "CheckNumerics", "Callbacks", "ScalarStats",
    "Inferencer", "ClassificationError", "BinaryClassificationStats", "InferenceRunner",
    "DataParallelInferenceRunner", "EstimatedTimeLeft", "MonitorBase", "Monitors", "TFEventWriter", "JSONWriter",
    "ScalarPrinter", "HyperParam", "GraphVarParam", "ObjAttrParam", "HyperParamSetter", "HumanHyperParamSetter",
    "ScheduledHyperParamSetter", "StatMonitorParamSetter", "HyperParamSetterWithFunc", "GPUUtilizationTracker",
    "GraphProfiler", "PeakMemoryTracker", "ThroughputTracker", "ModelSaver", "MinSaver", "MaxSaver", "ProgressBar",
    "MovingAverageSummary", "MergeAllSummaries", "SimpleMovingAverage", "PeriodicTrigger", "PeriodicCallback",
    "EnableCallbackIf", "SessionRunTimeout", "get_current_tower_context", "TowerContext", "get_global_step_var", "get_tf_version_tuple",
    "SessionInit", "ChainInit", "SaverRestore", "SaverRestoreRelaxed", "DictRestore", "JustCurrentSession",
    "get_model_loader", "SmartInit", "argscope", "get_arg_scope", "enable_argscope_for_module",
    "enable_argscope_for_function", "sessinit", "summary", "optimizer", "sesscreate", "gradproc", "varreplace",
    "tower", "StopTraining", "Trainer", "TrainConfig", "AutoResumeTrainConfig", "DEFAULT_CALLBACKS",
    "DEFAULT_MONITORS", "launch_train_with_config", "ModelDesc", "ModelDescBase", "SingleCostTrainer",
    "TowerTrainer", "NoOpTrainer", "SimpleTrainer", "QueueInputTrainer", "SyncMultiGPUTrainer",
    "SyncMultiGPUTrainerReplicated", "SyncMultiGPUTrainerParameterServer", "AsyncMultiGPUTrainer",
    "DistributedTrainerParameterServer", "DistributedTrainerReplicated", "HorovodTrainer", "FeedInput",
    "FeedfreeInput", "QueueInput", "BatchQueueInput", "DummyConstantInput", "TensorInput", "TFDatasetInput",
    "StagingInput", "InputSource", "remap_input_source", "OnlinePredictor", "OfflinePredictor", "PredictConfig", "DatasetPredictorBase",
    "SimpleDatasetPredictor", "FeedfreePredictor", "MultiThreadAsyncPredictor", "MultiTowerOfflinePredictor",
    "DataParallelOfflinePredictor", "MultiProcessDatasetPredictor", "PredictorBase", "tfv1", "StartProcOrThread", "TensorPrinter", "SendStat", "InjectShell", "SendMonitorData",
    "DumpTensorAsImage", "DumpParamAsImage", "CometMLMonitor", "GPUMemoryTracker", "HostMemoryTracker",
    "callbacks", "compat", "dataflow", "graph_builder", "input_source", "models", "predict", "tfutils", "train", "utils",
    "change_env", "execute_only_once", "get_tqdm",
    "humanize_time_delta", "get_global_step_value", "collect_env_info",
]
#: tensorpack's ``from tensorpack import *``: ``_STAR`` and the stand-ins of the names in ``_replaced``
__all__ = [*_STAR, *_stand_in_names(__name__)]


_unprovided = _unprovided_in(__name__)


def __getattr__(name: str) -> _Any:
    if name in _STAR:
        from . import _star  # noqa: PLC0415 - on first use

        value = globals()[name] = getattr(_star, name)
        return value
    return _unprovided(name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
