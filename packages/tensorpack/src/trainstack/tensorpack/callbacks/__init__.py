"""tensorpack 0.11's ``tensorpack.callbacks``.

Its names come from ``trainstack.callbacks``, ``trainstack.loop``, ``trainstack.towers``.
"""
from trainstack.callbacks import (
    CallbackFactory,
    CheckNumerics,
    DumpTensor,
    DumpTensors,
    EnableCallbackIf,
    EstimatedTimeLeft,
    GPUUtilizationTracker,
    GraphProfiler,
    GraphVarParam,
    HumanHyperParamSetter,
    HyperParam,
    HyperParamSetter,
    HyperParamSetterWithFunc,
    JSONWriter,
    MaxSaver,
    MergeAllSummaries,
    MinSaver,
    ModelSaver,
    MovingAverageSummary,
    ObjAttrParam,
    PeakMemoryTracker,
    PeriodicCallback,
    PeriodicTrigger,
    ProcessTensors,
    ProgressBar,
    ProxyCallback,
    RunOp,
    RunUpdateOps,
    ScalarPrinter,
    ScheduledHyperParamSetter,
    SimpleMovingAverage,
    StatMonitorParamSetter,
    TFEventWriter,
    ThroughputTracker,
)
from trainstack.loop import Callback, Callbacks, MonitorBase, Monitors, SessionRunTimeout
from trainstack.towers import (
    BinaryClassificationStats,
    ClassificationError,
    DataParallelInferenceRunner,
    Inferencer,
    InferenceRunner,
    ScalarStats,
)

from .._replaced import stand_in_names, unprovided
from .concurrency import StartProcOrThread
from .graph import DumpParamAsImage, DumpTensorAsImage
from .misc import InjectShell, SendStat
from .monitor import CometMLMonitor, SendMonitorData
from .prof import GPUMemoryTracker, HostMemoryTracker
from .steps import TensorPrinter

__all__ = [
    "Callback", "ProxyCallback", "CallbackFactory", "RunOp", "RunUpdateOps", "ProcessTensors", "DumpTensors",
    "DumpTensor", "CheckNumerics", "Callbacks", "ScalarStats", "Inferencer", "ClassificationError",
    "BinaryClassificationStats", "InferenceRunner", "DataParallelInferenceRunner", "EstimatedTimeLeft",
    "MonitorBase", "Monitors", "TFEventWriter", "JSONWriter", "ScalarPrinter", "HyperParam", "GraphVarParam",
    "ObjAttrParam", "HyperParamSetter", "HumanHyperParamSetter", "ScheduledHyperParamSetter",
    "StatMonitorParamSetter", "HyperParamSetterWithFunc", "GPUUtilizationTracker", "GraphProfiler",
    "PeakMemoryTracker", "ThroughputTracker", "ModelSaver", "MinSaver", "MaxSaver", "ProgressBar",
    "MovingAverageSummary", "MergeAllSummaries", "SimpleMovingAverage", "PeriodicTrigger", "PeriodicCallback",
    "EnableCallbackIf", "SessionRunTimeout", "StartProcOrThread", "TensorPrinter", "SendStat",
    "InjectShell", "SendMonitorData", "DumpTensorAsImage", "DumpParamAsImage", "CometMLMonitor", "GPUMemoryTracker",
    "HostMemoryTracker"
]

__all__ += stand_in_names(__name__)

__getattr__ = unprovided(__name__)
