"""Storage errors: the one rule every writer of a run follows when a write fails.

A checkpoint, a line of ``stats.jsonl`` or a TensorBoard event that cannot be written (a full
disk, a directory gone or read-only, a file-size limit) stops the run: the writer raises
:class:`StorageError`, every callback's ``after_train`` still runs (what can be flushed is),
and the program ends with an error status. A run that went on without saving would end with
exit status 0 and its last epochs lost, which is worse than stopping. The error names the file
or directory, the cause, and the last checkpoint that was written completely, so the operator
knows what to fix and where a resumed run (``AutoResumeTrainConfig``) will continue from.
"""
from __future__ import annotations

import os
import re

import tensorflow as tf

from .checkpoint_files import last_checkpoint

__all__ = ["StorageError", "STORAGE_ERRORS"]

#: What a failing write raises: Python's OSError, and TensorFlow's errors for a full disk
#: (ResourceExhausted), a file-size limit (OutOfRange), a missing or unwritable directory and
#: the like.
STORAGE_ERRORS: tuple[type[BaseException], ...] = (
    OSError, tf.errors.PermissionDeniedError, tf.errors.ResourceExhaustedError,
    tf.errors.OutOfRangeError, tf.errors.AlreadyExistsError, tf.errors.UnavailableError,
    tf.errors.FailedPreconditionError, tf.errors.NotFoundError, tf.errors.DataLossError,
    tf.errors.UnknownError)


class StorageError(RuntimeError):
    """A write of the run failed; the run stops (see the module docstring).

    ``path``: what could not be written; ``cause``: the underlying error's text;
    ``last_checkpoint``: the newest complete checkpoint in ``checkpoint_dir`` (None: none):
    ``last_good`` when the writer knows it (a saver's own record), else found there.
    """

    def __init__(self, who: str, what: str, path: str, cause: BaseException,
                 checkpoint_dir: str | os.PathLike | None, last_good: str | None = None) -> None:
        self.who, self.path = who, os.fspath(path)
        self.cause = _first_line(cause)
        self.checkpoint_dir = None if checkpoint_dir is None else os.fspath(checkpoint_dir)
        if last_good is None and self.checkpoint_dir:
            last_good = last_checkpoint(self.checkpoint_dir)
        self.last_checkpoint = last_good
        last = self.last_checkpoint or (f"none in {self.checkpoint_dir}" if self.checkpoint_dir else "none")
        super().__init__(
            f"{who} could not write {what} {self.path}: {self.cause}. The last good checkpoint is "
            f"{last}. Training stops here (a run that cannot save must not go on as if it had): "
            "free space or fix the directory, then run again; AutoResumeTrainConfig continues from "
            "that checkpoint.")


def _first_line(error: BaseException) -> str:
    """``Type: the first line of its message``, without TensorFlow's ``{{function_node ...}}``."""
    text = str(error).strip()
    if isinstance(error, tf.errors.OpError):
        text = (error.message or text).strip()
    text = re.sub(r"\{\{function_node [^}]*\}\}\s*", "", text)
    line = text.splitlines()[0] if text else ""
    return f"{type(error).__name__}: {line}" if line else type(error).__name__
