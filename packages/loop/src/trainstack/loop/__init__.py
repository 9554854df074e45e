"""trainstack.loop: the epoch × step training loop and its callback protocol.

Pure Python: nothing here imports a third-party package.
"""
from ._console import install_console_handler as _install_console_handler
from .argtools import memoized, memoized_method
from .callback import HOOKS, Callback
from .checks import ArgumentError, check_bool, check_int, check_number, is_int
from .group import Callbacks
from .interrupt import TrainingInterrupted, second_signal_hint, stop_after_this_step
from .lazy_exports import lazy_exports
from .monitors import MonitorBase, Monitors
from .run import FetchableStep, RunArgs, RunContext, RunValues, call_step
from .state import TrainLoop
from .stop import NonFiniteError, StopTraining
from .trainer import DEFAULT_MAX_EPOCH, Trainer
from .watchdog import SessionRunTimeout, StepTimeoutError, StepWatchdog

# tensorpack printed its INFO lines without any logging setup: so does trainstack (see _console.py)
_install_console_handler()

__all__ = [
    "Callback", "Callbacks", "DEFAULT_MAX_EPOCH", "FetchableStep", "HOOKS", "MonitorBase",
    "Monitors", "NonFiniteError", "RunArgs", "RunContext", "RunValues", "SessionRunTimeout",
    "StepTimeoutError", "StepWatchdog", "StopTraining", "TrainLoop", "Trainer",
    "TrainingInterrupted", "call_step",
    # what trainstack.distributed's signal handling builds on
    "second_signal_hint", "stop_after_this_step",
    # argument checks shared by every layer (trainstack.loop.checks)
    "ArgumentError", "check_bool", "check_int", "check_number", "is_int",
    # tensorpack.utils.argtools
    "memoized", "memoized_method",
    # what each layer's __init__ serves its names with
    "lazy_exports",
]
