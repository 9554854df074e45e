"""trainstack.callbacks: the callback library and the monitors, on TensorFlow 2."""
# --- monitors, logger directory, profiling ---
from .logdir import auto_set_dir, get_logger_dir, set_logger_dir
# --- scheduling, progress, time, stopping ---
from .progress import ProgressBar
from .proxy import CallbackFactory, ProxyCallback
from .stopping import EarlyStopping, TerminateOnNaN
from .timing import EstimatedTimeLeft, ThroughputTracker
from .trigger import EnableCallbackIf, PeriodicCallback, PeriodicTrigger
# --- checkpoints, hyperparameters ---
# --- summaries, graph and tensors ---
