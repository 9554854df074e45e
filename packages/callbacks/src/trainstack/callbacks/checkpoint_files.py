"""The checkpoint files of a directory, found by listing it.

``tf.train.CheckpointManager`` records its checkpoints in the ``checkpoint`` state file, but
that file can be deleted, cut off or emptied while the checkpoints themselves are intact; and a
save that was killed leaves a ``<prefix>_temp/`` folder that TensorFlow never removes. The
files on disk are the truth: this module lists them (:func:`list_checkpoints`), says what is
wrong with the state file (:func:`state_file_problem`), rebuilds it from the listing
(:func:`rebuild_state_file`) and removes the leftover temporary folders
(:func:`remove_temp_folders`). The savers call :func:`repair_checkpoint_dir` at the start of a
run, once they hold the directory's lock; readers (``AutoResumeTrainConfig``) only list.
"""
from __future__ import annotations

import logging
import os
import re
import shutil
from typing import Any

import tensorflow as tf

from . import tf_private

__all__ = ["STATE_FILE", "list_checkpoints", "checkpoint_number", "last_checkpoint", "state_file_problem",
           "read_state_file", "rebuild_state_file", "remove_temp_folders", "repair_checkpoint_dir"]

logger = logging.getLogger("trainstack.callbacks")

#: The name of TensorFlow's checkpoint state file.
STATE_FILE = "checkpoint"


def checkpoint_number(path: str | None) -> int | None:
    """The number a CheckpointManager put at the end of a checkpoint prefix (``model-300``)."""
    match = re.search(r"-(\d+)$", path or "")
    return int(match.group(1)) if match else None


def list_checkpoints(directory: str | os.PathLike, name: str = "model") -> list[str]:
    """The prefixes ``<directory>/<name>-<N>`` that have an ``.index`` file, newest (highest N)
    first. Nothing is read: a listed checkpoint may still be damaged."""
    directory = os.fspath(directory)
    if not os.path.isdir(directory):
        return []
    pattern = re.compile(rf"^{re.escape(name)}-(\d+)\.index$")
    numbered = [(int(m.group(1)), os.path.join(directory, f[:-len(".index")]))
                for f in os.listdir(directory) if (m := pattern.match(f))]
    return [path for _, path in sorted(numbered, reverse=True)]


def read_state_file(directory: str | os.PathLike) -> Any:
    """The parsed state file of ``directory`` (paths made absolute), or None when it is missing,
    empty or damaged (:func:`state_file_problem` says which)."""
    try:
        return tf.train.get_checkpoint_state(os.fspath(directory))
    except ValueError:  # an empty state file: "Invalid checkpoint state"
        return None


def state_file_problem(directory: str | os.PathLike, name: str = "model") -> str | None:
    """What is wrong with ``directory``'s state file when it holds checkpoints: ``"missing"``,
    ``"empty"``, ``"damaged"`` (it does not parse, or names a checkpoint that is not there); None
    when it is fine or when there are no checkpoints to name."""
    directory = os.fspath(directory)
    listed = list_checkpoints(directory, name)
    if not listed:
        return None
    path = os.path.join(directory, STATE_FILE)
    if not os.path.isfile(path):
        return "missing"
    if os.path.getsize(path) == 0:
        return "empty"
    state = read_state_file(directory)
    if state is None or not state.model_checkpoint_path:
        return "damaged"
    if not tf.io.gfile.exists(state.model_checkpoint_path + ".index"):
        return f"damaged (it names {state.model_checkpoint_path}, which is not there)"
    return None


def rebuild_state_file(directory: str | os.PathLike, name: str = "model") -> str | None:
    """Rewrite ``directory``'s state file from the listing (newest checkpoint as the latest, all
    of them as kept, oldest first, with their files' times: a CheckpointManager then manages them
    as it managed them before, ``max_to_keep`` included); return the latest, or None when there is
    no checkpoint. The file is replaced atomically, as TensorFlow writes it."""
    directory = os.fspath(directory)
    listed = list_checkpoints(directory, name)
    if not listed:
        return None
    oldest_first = list(reversed(listed))
    times = [os.path.getmtime(p + ".index") for p in oldest_first]
    tf_private.write_checkpoint_state(directory, os.path.basename(listed[0]),
                                      [os.path.basename(p) for p in oldest_first], times, min(times) - 1)
    return listed[0]


def last_checkpoint(directory: str | os.PathLike, name: str = "model") -> str | None:
    """The newest complete checkpoint of ``directory``: the one its state file names, else the
    newest listed one; None when there is none."""
    directory = os.fspath(directory)
    state = read_state_file(directory) if os.path.isdir(directory) else None
    if state is not None and state.model_checkpoint_path and tf.io.gfile.exists(
            state.model_checkpoint_path + ".index"):
        return state.model_checkpoint_path
    listed = list_checkpoints(directory, name)
    return listed[0] if listed else None


def remove_temp_folders(directory: str | os.PathLike, who: str, name: str = "model") -> list[str]:
    """Remove the ``<name>-<N>_temp/`` folders an interrupted save left in ``directory`` (logged);
    return them. Only the owner of the directory (its lock's holder) may call this."""
    directory = os.fspath(directory)
    if not os.path.isdir(directory):
        return []
    pattern = re.compile(rf"^{re.escape(name)}-\d+_temp$")
    removed = []
    for entry in sorted(os.listdir(directory)):
        path = os.path.join(directory, entry)
        if pattern.match(entry) and os.path.isdir(path):
            shutil.rmtree(path)
            removed.append(path)
    if removed:
        logger.info("%s: removed %d temporary folder(s) left by an interrupted save: %s", who,
                    len(removed), ", ".join(removed))
    return removed


def repair_checkpoint_dir(directory: str | os.PathLike, who: str, name: str = "model") -> None:
    """Make ``directory`` ready for a CheckpointManager: remove leftover temporary folders and
    rebuild a missing, empty or damaged state file from the listing (both logged)."""
    remove_temp_folders(directory, who, name)
    problem = state_file_problem(directory, name)
    if problem is not None:
        latest = rebuild_state_file(directory, name)
        logger.warning("%s: the checkpoint state file of %s was %s; rebuilt it from the checkpoints "
                       "found there (latest: %s).", who, directory, problem, latest)
