"""tensorpack 0.11's ``tensorpack.utils.logger``: its names from ``trainstack.callbacks.logger``."""
from trainstack.callbacks.logger import (
    addFilter,
    auto_set_dir,
    critical,
    debug,
    error,
    exception,
    get_logger_dir,
    info,
    set_logger_dir,
    setLevel,
    warn,
    warning,
)

from .._replaced import unprovided

__all__ = [
    "set_logger_dir", "auto_set_dir", "get_logger_dir", "info", "warning", "error", "critical", "exception",
    "debug", "setLevel", "addFilter", "warn"
]

__getattr__ = unprovided(__name__, LOG_DIR=get_logger_dir)  # tensorpack's LOG_DIR, read when used
