"""The writers a non-chief process of a multi-process trainer leaves to the chief.

The monitors that write files (``JSONWriter``, ``TFEventWriter``) write into the logger
directory unless given a ``logdir`` of their own; they say so with their public
``writes_to_logger_dir``. The trainers of several processes drop those on the processes
that are not the chief (HorovodTrainer: on the ranks whose logger directory is rank 0's;
DistributedTrainerReplicated: on every non-chief worker), so that only the chief writes
``stats.jsonl`` and the event files there.
"""
from __future__ import annotations

import logging
from collections.abc import Sequence

from trainstack.loop import MonitorBase

__all__ = ["without_logger_dir_writers"]

logger = logging.getLogger("trainstack.distributed")


def without_logger_dir_writers(monitors: Sequence[MonitorBase], process: str) -> list[MonitorBase]:
    """``monitors`` without those whose ``writes_to_logger_dir`` is True, each one dropped
    logged as skipped by ``process`` (e.g. ``"HorovodTrainer rank 1"``)."""
    if not isinstance(monitors, (list, tuple)):
        return monitors  # type: ignore[return-value]  # the trainer's setup_callbacks says what is wrong
    kept = []
    for m in monitors:
        if getattr(m, "writes_to_logger_dir", False) is True:
            logger.info("%s skips %s: it would write into the logger directory, where only the chief "
                        "writes (give it a logdir= of its own to keep it on this process).", process, m.name)
        else:
            kept.append(m)
    return kept
