"""``logger``: tensorpack's ``tensorpack.utils.logger``, for scripts ported with ``from trainstack import *``.

::

    from trainstack import *
    logger.auto_set_dir()                  # train_log/<script name>, as tensorpack
    logger.info("batch size %d", 64)       # printed, and recorded in <logger dir>/log.log

- ``set_logger_dir(dirname, action=None)``, ``auto_set_dir(action=None, name=None)``,
  ``get_logger_dir()`` are :mod:`trainstack.callbacks.logdir`'s (the one place that
  decides the logger directory); ``logger.LOG_DIR`` reads it, as tensorpack's did.
- ``info``, ``warning`` (and ``warn``), ``error``, ``critical``, ``exception``,
  ``debug``, ``setLevel``, ``addFilter`` are those of the ``"trainstack"`` logging
  logger. Its INFO lines are printed (on stderr; tensorpack's went to stdout)
  without any logging setup, as tensorpack's were, and go to the application's handlers when it has some
  (see ``trainstack.loop._console``); unlike tensorpack's, the logger propagates,
  so ``logging.basicConfig`` and pytest's ``caplog`` see its records.
"""
from __future__ import annotations

import logging as _logging

from .logdir import auto_set_dir, get_logger_dir, set_logger_dir

__all__ = ["set_logger_dir", "auto_set_dir", "get_logger_dir", "info", "warning", "warn", "error",
           "critical", "exception", "debug", "setLevel", "addFilter"]

_logger = _logging.getLogger("trainstack")

info = _logger.info
warning = _logger.warning
#: tensorpack kept ``warn`` (deprecated in :mod:`logging`) as ``warning``
warn = _logger.warning
error = _logger.error
critical = _logger.critical
exception = _logger.exception
debug = _logger.debug
setLevel = _logger.setLevel
addFilter = _logger.addFilter


def __getattr__(name: str):
    if name == "LOG_DIR":  # tensorpack's module global: the logger directory, or None
        return get_logger_dir()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
