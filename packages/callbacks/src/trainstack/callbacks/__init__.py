"""trainstack.callbacks: the callback library and the monitors, on TensorFlow 2."""
from typing import TYPE_CHECKING

# isort: off
from . import tf_startup  # noqa: F401 - first: imports TensorFlow without its start-up lines
# isort: on
from trainstack.loop.lazy_exports import lazy_exports

if TYPE_CHECKING:  # the public names; each is imported on its first use (see lazy_exports)
    from trainstack.loop import MonitorBase, Monitors

    from . import logger
    from .defaults import DEFAULT_CALLBACKS, DEFAULT_MONITORS
    from .gpu import GPUUtilizationTracker, PeakMemoryTracker
    from .graph import CheckNumerics, DumpTensor, DumpTensors, ProcessTensors, RunOp, RunUpdateOps
    from .hyperparam import GraphVarParam, HyperParam, NamedParam, ObjAttrParam, OptimizerParam, TFVariableParam
    from .jsonwriter import JSONWriter
    from .logdir import auto_set_dir, get_logger_dir, set_logger_dir, unset_logger_dir
    from .logdir_lock import LogDirLockedError
    from .param import (
                        HumanHyperParamSetter,
                        HyperParamSetter,
                        HyperParamSetterWithFunc,
                        ScheduledHyperParamSetter,
                        StatMonitorParamSetter,
    )
    from .printer import ScalarPrinter
    from .profiler import GraphProfiler
    from .progress import ProgressBar
    from .proxy import CallbackFactory, ProxyCallback
    from .saver import MaxSaver, MinSaver, ModelSaver, checkpoint_objects_of, load_loop_state, restore_loop_state
    from .stopping import EarlyStopping, TerminateOnNaN
    from .storage import StorageError
    from .summary import (
                        SummaryCollection,
                        default_summary_collection,
                        get_summary_collection,
                        summary_collection_chosen,
                        summary_collection_scope,
    )
    from .summary_callbacks import MergeAllSummaries, MovingAverageSummary, SimpleMovingAverage
    from .summary_recording import add_moving_summary, add_tensor_summary
    from .tfevent import TFEventWriter
    from .timing import EstimatedTimeLeft, ThroughputTracker
    from .trainer_protocol import ModelTrainer, declares
    from .trigger import EnableCallbackIf, PeriodicCallback, PeriodicTrigger
    from .variables import is_variable, tf_variable, to_numpy, variable_name, variables_of

__all__ = [
    # monitors and where they write
    "MonitorBase", "Monitors", "TFEventWriter", "JSONWriter", "ScalarPrinter",
    "set_logger_dir", "get_logger_dir", "unset_logger_dir", "auto_set_dir", "LogDirLockedError",
    "StorageError",
    "DEFAULT_CALLBACKS", "DEFAULT_MONITORS",
    # scheduling
    "ProxyCallback", "CallbackFactory", "PeriodicTrigger", "PeriodicCallback", "EnableCallbackIf",
    # progress, time, stopping
    "ProgressBar", "EstimatedTimeLeft", "ThroughputTracker", "TerminateOnNaN", "EarlyStopping",
    # checkpoints
    "ModelSaver", "MinSaver", "MaxSaver", "checkpoint_objects_of", "load_loop_state", "restore_loop_state",
    # hyperparameters
    "HyperParam", "TFVariableParam", "GraphVarParam", "OptimizerParam", "ObjAttrParam", "NamedParam",
    "HyperParamSetter", "ScheduledHyperParamSetter", "HyperParamSetterWithFunc",
    "StatMonitorParamSetter", "HumanHyperParamSetter",
    # what callbacks read from a trainer of a model
    "ModelTrainer", "declares",
    # variables and fetched values: one rule each
    "is_variable", "tf_variable", "variable_name", "variables_of", "to_numpy",
    # summaries
    "SummaryCollection", "get_summary_collection", "summary_collection_scope", "summary_collection_chosen",
    "default_summary_collection", "add_moving_summary", "add_tensor_summary", "MovingAverageSummary", "MergeAllSummaries",
    "SimpleMovingAverage",
    # graph and tensors
    "RunOp", "RunUpdateOps", "ProcessTensors", "DumpTensors", "DumpTensor", "CheckNumerics",
    # profiling
    "GPUUtilizationTracker", "PeakMemoryTracker", "GraphProfiler",
    # porting tensorpack scripts: its logger module (tfv1, get_num_gpu, KerasPhaseCallback: trainstack.towers.tf1)
    "logger",
]

__getattr__, __dir__ = lazy_exports(__name__)
