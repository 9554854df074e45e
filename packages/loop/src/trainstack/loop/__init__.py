"""trainstack.loop: the epoch × step training loop and its callback protocol.

Pure Python: nothing here imports a third-party package.
"""
from .callback import HOOKS, Callback
from .group import Callbacks
from .monitors import MonitorBase, Monitors
from .run import FetchableStep, RunArgs, RunContext, RunValues, call_step
from .state import TrainLoop
from .stop import StopTraining
from .trainer import DEFAULT_MAX_EPOCH, Trainer

__all__ = [
    "Callback", "Callbacks", "DEFAULT_MAX_EPOCH", "FetchableStep", "HOOKS", "MonitorBase",
    "Monitors", "RunArgs", "RunContext", "RunValues", "StopTraining", "TrainLoop", "Trainer",
    "call_step",
]
