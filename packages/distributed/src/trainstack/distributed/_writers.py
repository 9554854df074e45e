"""The writers a non-chief process of a multi-process trainer leaves to the chief.

The monitors that write files (``JSONWriter``, ``TFEventWriter``) write into the logger
directory unless given a ``logdir`` of their own; they say so with their public
``writes_to_logger_dir``. One rule, :func:`monitors_of_process`, for every trainer of several
processes: a process that is not the chief drops those, unless it is known to have a logger
directory of its own (HorovodTrainer asks rank 0 for its directory; DistributedTrainerReplicated,
whose workers may be on other hosts, cannot tell, and takes the directory as the chief's), so that
only the chief writes ``stats.jsonl`` and the event files there.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from trainstack.loop import MonitorBase

__all__ = ["monitors_of_process", "without_logger_dir_writers", "writes_to_logger_dir"]

logger = logging.getLogger("trainstack.distributed")


def writes_to_logger_dir(monitor: Any) -> bool:
    """Whether ``monitor`` writes into the logger directory: its public ``writes_to_logger_dir``
    is True (a writer given a ``logdir`` of its own says False)."""
    return getattr(monitor, "writes_to_logger_dir", False) is True


def monitors_of_process(monitors: Sequence[MonitorBase], *, is_chief: bool, process: str,
                        own_logger_dir: bool = False,
                        gate: Callable[[MonitorBase], MonitorBase] | None = None) -> Sequence[MonitorBase]:
    """The monitors a process keeps: all on the chief, and on a process whose logger directory is
    its own (``own_logger_dir``: not the chief's); elsewhere :func:`without_logger_dir_writers`.
    With ``gate`` (a trainer whose chief may change, as an elastic run's), every process keeps the
    logger-directory writers, each as ``gate(monitor)``, which writes only while its process is
    the chief."""
    if gate is not None:
        if not isinstance(monitors, (list, tuple)):
            return monitors  # the trainer's setup_callbacks says what is wrong
        return [gate(m) if writes_to_logger_dir(m) else m for m in monitors]
    if is_chief or own_logger_dir:
        return monitors
    return without_logger_dir_writers(monitors, process)


def without_logger_dir_writers(monitors: Sequence[MonitorBase], process: str) -> list[MonitorBase]:
    """``monitors`` without those whose ``writes_to_logger_dir`` is True, each one dropped
    logged as skipped by ``process`` (e.g. ``"HorovodTrainer rank 1"``)."""
    if not isinstance(monitors, (list, tuple)):
        return monitors  # type: ignore[return-value]  # the trainer's setup_callbacks says what is wrong
    kept = []
    for m in monitors:
        if writes_to_logger_dir(m):
            logger.info("%s skips %s: it would write into the logger directory, where only the chief "
                        "writes (give it a logdir= of its own to keep it on this process).", process, m.name)
        else:
            kept.append(m)
    return kept
