"""The logger directory: the one place that decides where a run writes.

Monitors (TensorBoard events, ``stats.jsonl``), checkpoints and profiler
traces default to :func:`get_logger_dir`. Setting it also opens
``<dir>/log.log``, which records the "trainstack" loggers.

When the directory already holds files, ``action`` says what to do
(tensorpack's choices; a letter or the word):

- ``k`` / ``keep``: use it as it is (resuming a run);
- ``b`` / ``backup``: rename it to ``<dir><timestamp>`` and start empty;
- ``d`` / ``delete``: delete it and start empty;
- ``n`` / ``new``: use ``<dir><timestamp>`` instead;
- ``q`` / ``quit``: refuse (FileExistsError).

Without ``action`` the user is asked when stdin is a terminal. Otherwise
(CI, pytest, a batch job, ``nohup``) there is no one to ask and nothing waits
on input: the default is ``backup``, the one choice that neither loses the
old run nor mixes the new one into it. The old directory is renamed to
``<dir><timestamp>`` (all its files kept), training starts in an empty
``<dir>``, and a WARNING names both directories and how to choose another
action (``set_logger_dir(dirname, action=...)`` / ``auto_set_dir(action=...)``;
``'k'`` to resume in place).

``backup`` and ``delete`` never touch a directory that another live run writes into: they take
the directory's lock first (see :mod:`~trainstack.callbacks.logdir_lock`) and fail with
``LogDirLockedError``, naming that run's pid and host, when it is held.
"""
from __future__ import annotations

import logging
import os
import shutil
import sys
from datetime import datetime

from .logdir_lock import exclusive_directory, release_all

__all__ = ["set_logger_dir", "get_logger_dir", "unset_logger_dir", "auto_set_dir", "LOG_FILE_NAME"]

logger = logging.getLogger("trainstack.callbacks")

#: Name of the log file written in the logger directory.
LOG_FILE_NAME = "log.log"

_ACTIONS = {"k": "keep", "b": "backup", "d": "delete", "n": "new", "q": "quit"}
_ACCEPTED = ", ".join(f"{k!r}/{w!r}" for k, w in _ACTIONS.items())

#: The action taken without one given when stdin is not a terminal (the module docstring).
_DEFAULT_ACTION = "b"

_log_dir: str | None = None
_last_backup: str | None = None
_file_handler: logging.FileHandler | None = None


def get_logger_dir() -> str | None:
    """The logger directory, or None when none was set."""
    return _log_dir


def set_logger_dir(dirname: str, action: str | None = None) -> str:
    """Make ``dirname`` the logger directory and log to ``<dirname>/log.log``.

    ``action`` decides what happens when the directory exists and is not
    empty (hidden files do not count); see the module docstring. Without
    ``action``, a user at a terminal is asked; without a terminal the old
    directory is backed up (renamed ``<dirname><timestamp>``) and ``dirname``
    starts empty, with a WARNING saying so. Returns the directory actually
    used (different from ``dirname`` with ``new``).
    """
    global _log_dir
    action = _normalize_action(action)
    dirname = os.path.normpath(os.fspath(dirname))
    if os.path.exists(dirname) and not os.path.isdir(dirname):
        raise NotADirectoryError(f"logger directory {dirname!r} exists and is not a directory")
    defaulted = False
    if _is_nonempty_dir(dirname):
        if action is None and not _stdin_is_a_terminal():
            action, defaulted = _DEFAULT_ACTION, True
        elif action is None:
            action = _ask_action(dirname)
        if action == "q":
            raise FileExistsError(f"logger directory {dirname!r} exists and is not empty "
                                  "(action 'quit')")
    else:
        action = None
    # close the old log file first, so that its directory can be moved or deleted
    unset_logger_dir()
    old_dirname = dirname
    if action is not None:
        dirname = _apply_action(dirname, action)
    os.makedirs(dirname, exist_ok=True)
    _open_file_handler(os.path.join(dirname, LOG_FILE_NAME))
    _log_dir = dirname
    if defaulted:
        # after the log file is open, so that the new run's log.log records it too
        logger.warning(
            "Logger directory %s existed and was not empty, and there is no terminal to ask what "
            "to do: backed it up to %s (action 'backup', the default without a terminal) and "
            "started %s empty. To choose another action, pass action= to set_logger_dir() or "
            "auto_set_dir(): %s.", old_dirname, _last_backup, dirname, _ACCEPTED)
    logger.info("Logger directory: %s (argv: %s)", dirname, " ".join(sys.argv))
    return dirname


def unset_logger_dir() -> None:
    """Close the log file, release the directory locks this process holds and forget the logger
    directory (between runs in one process, tests)."""
    global _log_dir
    _close_file_handler()
    release_all()
    _log_dir = None


def auto_set_dir(action: str | None = None, name: str | None = None) -> str:
    """Set the logger directory to ``train_log/<script name>[:<name>]``.

    The script is the running ``__main__`` module's file, without extension.
    ``action`` is :func:`set_logger_dir`'s: without it, an existing non-empty
    directory is asked about at a terminal and backed up (renamed
    ``<dir><timestamp>``, with a WARNING) when stdin is not a terminal.
    """
    main_file = getattr(sys.modules.get("__main__"), "__file__", None)
    if not main_file:
        raise RuntimeError("auto_set_dir() needs a script: __main__ has no __file__ (interactive "
                           "session?); call set_logger_dir(dirname) instead")
    dirname = os.path.join("train_log", os.path.splitext(os.path.basename(main_file))[0])
    if name:
        dirname += ("_" if os.name == "nt" else ":") + name  # ':' is not allowed on Windows
    return set_logger_dir(dirname, action=action)


def _normalize_action(action: str | None) -> str | None:
    if action is None:
        return None
    key = str(action).strip().lower()
    for letter, word in _ACTIONS.items():
        if key in (letter, word):
            return letter
    raise ValueError(f"unknown logger directory action {action!r}; expected one of {_ACCEPTED}")


def _is_nonempty_dir(dirname: str) -> bool:
    return os.path.isdir(dirname) and any(not f.startswith(".") for f in os.listdir(dirname))


def _ask_action(dirname: str) -> str:
    logger.warning("Logger directory %s exists. Keep it when resuming a previous run.", dirname)
    while True:
        try:
            answer = input("Select action: k (keep) / b (backup) / d (delete) / n (new) / q (quit): ")
        except EOFError:
            answer = "q"
        try:
            action = _normalize_action(answer)
        except ValueError:
            continue
        if action is not None:
            return action


def _stdin_is_a_terminal() -> bool:
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except (AttributeError, ValueError):  # replaced or closed stdin
        return False


def _apply_action(dirname: str, action: str) -> str:
    """Do ``action`` on the non-empty ``dirname``; return the directory to use."""
    global _last_backup
    if action == "b":
        backup = _timestamped(dirname)
        with exclusive_directory(dirname, f"set_logger_dir cannot back up {dirname}"):
            shutil.move(dirname, backup)
        _last_backup = backup
        logger.info("Logger directory %s moved to %s", dirname, backup)
    elif action == "d":
        with exclusive_directory(dirname, f"set_logger_dir cannot delete {dirname}"):
            shutil.rmtree(dirname)
        logger.info("Logger directory %s deleted", dirname)
    elif action == "n":
        dirname = _timestamped(dirname)
        logger.info("Using a new logger directory %s", dirname)
    return dirname


def _timestamped(dirname: str) -> str:
    """``dirname`` + the current time, made unique if that exists already."""
    base = dirname + datetime.now().strftime("%m%d-%H%M%S")
    candidate, n = base, 1
    while os.path.exists(candidate):
        candidate, n = f"{base}-{n}", n + 1
    return candidate


def _open_file_handler(path: str) -> None:
    global _file_handler
    lib = logging.getLogger("trainstack")
    if lib.level == logging.NOTSET:
        lib.setLevel(logging.INFO)  # the log file records INFO and above
    # append: with 'keep' (resume), the previous run's log stays
    handler = logging.FileHandler(path, mode="a", encoding="utf-8")
    handler.setFormatter(logging.Formatter("[%(asctime)s %(name)s %(levelname)s] %(message)s",
                                           "%m%d %H:%M:%S"))
    lib.addHandler(handler)
    _file_handler = handler


def _close_file_handler() -> None:
    global _file_handler
    if _file_handler is not None:
        logging.getLogger("trainstack").removeHandler(_file_handler)
        _file_handler.close()
        _file_handler = None
