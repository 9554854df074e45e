"""trainstack's console logging: INFO and above of the "trainstack" loggers, printed once.

tensorpack's logger printed its INFO lines (the logger directory, "Automatically
applying ...", the epochs) whether or not the script configured
logging. trainstack keeps that, without taking the records away from an
application that configures logging itself:

- Importing :mod:`trainstack.loop` (every layer does) puts one handler on the
  ``"trainstack"`` logger and, when that logger's level is unset, sets it to
  INFO. The handler writes to the current ``sys.stderr`` (looked up when a
  line is written, so redirections apply), where Python's logging and the
  progress bar write; tensorpack's wrote to stdout.
- Records still propagate to the root logger. When the application has a
  console handler of its own there (``logging.basicConfig(...)``, pytest's
  capture, absl's handler under ``absl.app.run``, ...), the trainstack handler
  stays quiet and the application's handler prints the line, in its format.
  File handlers (such as the logger directory's ``log.log``) do not count.
- TensorFlow logs through absl, whose first log call runs a bare
  ``logging.basicConfig()`` when the root logger has no handler (the first
  checkpoint does it). That handler is not the application's choice: the
  trainstack handler keeps printing, and the implicit handler skips the lines
  it printed, so no line appears twice.
"""
from __future__ import annotations

import logging
import sys

__all__ = ["install_console_handler", "ConsoleHandler", "flush_output"]

_LIB = "trainstack"
_LEVEL_TAGS = {logging.WARNING: "WRN ", logging.ERROR: "ERR ", logging.CRITICAL: "CRIT "}


class _Formatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__("[%(asctime)s %(name)s] %(tag)s%(message)s", "%m%d %H:%M:%S")

    def format(self, record: logging.LogRecord) -> str:
        record.tag = _LEVEL_TAGS.get(record.levelno, "")
        return super().format(record)


class _SkipPrinted(logging.Filter):
    """On an implicit root handler: skip the records the trainstack console handler printed."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not getattr(record, "_trainstack_printed", False)


_SKIP_PRINTED = _SkipPrinted()


# StreamHandler is generic in typeshed only; StreamHandler[TextIO] would fail at run time on Python 3.10
class ConsoleHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """The "trainstack" logger's console handler (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)
        self.setFormatter(_Formatter())

    def handle(self, record: logging.LogRecord) -> bool:
        if _application_console(logging.getLogger(_LIB), self):
            return False
        self.stream = sys.stderr  # the current one (pytest's capsys, contextlib.redirect_stderr)
        record._trainstack_printed = True
        return super().handle(record)


def _is_console(handler: logging.Handler) -> bool:
    return not isinstance(handler, (logging.FileHandler, logging.NullHandler))


def _is_implicit(handler: logging.Handler) -> bool:
    """A handler made by a bare ``logging.basicConfig()`` (absl's first log call runs one)."""
    fmt = getattr(handler.formatter, "_fmt", None)
    return (type(handler) is logging.StreamHandler and fmt == logging.BASIC_FORMAT
            and getattr(handler, "stream", None) in (sys.stderr, sys.__stderr__))


def _application_console(lib: logging.Logger, ours: logging.Handler) -> bool:
    """Whether a console handler of the application's gets the "trainstack" records; marks the
    implicit ones (bare basicConfig) to skip what the trainstack handler prints."""
    found = any(_is_console(h) for h in lib.handlers if h is not ours)
    if lib.propagate:
        for h in logging.getLogger().handlers:
            if not _is_console(h):
                continue
            if _is_implicit(h):
                if _SKIP_PRINTED not in h.filters:
                    h.addFilter(_SKIP_PRINTED)
            else:
                found = True
    return found


def install_console_handler() -> ConsoleHandler:
    """Put the console handler on the "trainstack" logger (once) and set its level to INFO when
    unset. Called when :mod:`trainstack.loop` is imported; returns the handler."""
    lib = logging.getLogger(_LIB)
    for h in lib.handlers:
        if isinstance(h, ConsoleHandler):
            return h
    handler = ConsoleHandler()
    lib.addHandler(handler)
    if lib.level == logging.NOTSET:
        lib.setLevel(logging.INFO)
    return handler


def flush_output() -> None:
    """Flush stdout, stderr and the log handlers (of the "trainstack" and root loggers): what a
    process ending at once with ``os._exit`` calls first, so that its last lines are not lost."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001,S110 - a closed or odd stream must not stop the exit
            pass
    for name in (_LIB, None):
        for handler in logging.getLogger(name).handlers:
            try:
                handler.flush()
            except Exception:  # noqa: BLE001,S110
                pass
