"""JSONWriter: the monitor that appends the statistics to ``stats.jsonl``."""
from __future__ import annotations

import json
import logging
import os
from typing import Any, NamedTuple

from trainstack.loop import MonitorBase

from .logdir import get_logger_dir
from .logdir_lock import WriterLock
from .storage import STORAGE_ERRORS, StorageError

__all__ = ["JSONWriter"]

logger = logging.getLogger("trainstack.callbacks")


class JSONWriter(MonitorBase):
    """Append one JSON object per line to ``<logdir>/stats.jsonl``.

    Each line holds ``epoch_num``, ``global_step`` and the last value of every
    scalar put since the previous line. A line is written at each epoch's end
    (always), and also, when scalars are waiting, at ``before_train`` (those
    put during setup), at ``trigger()`` (e.g. under a PeriodicTrigger) and at
    ``after_train`` (those put after the last epoch's end), so no scalar is
    lost. ``epoch_num`` is the last *finished* epoch when the line was
    written, so the last line always tells where a resumed run starts.

    The file is only appended to (flushed and fsync'd at each line), never
    rewritten: a crash loses at most the line being written. One rule holds
    wherever the file is read (:meth:`load_existing_json`, and ``before_train``
    when a run appends to it): a damaged last line (not a JSON object: a crash
    while writing it, a disk that lost it), whether or not it ends in a
    newline, is dropped with a warning naming it; ``before_train`` cuts it off
    the file, so the new lines follow the last good one. A damaged line before
    the last one is an error naming the file and the line: the stats are
    corrupt, not cut short, and nothing is appended.

    A line that cannot be written (a full disk) stops the run with
    :class:`~trainstack.callbacks.storage.StorageError`, as a failed checkpoint
    does. While training, the writer holds the directory's lock (see
    :mod:`~trainstack.callbacks.logdir_lock`): one run writes there at a time.
    ``logdir`` defaults to the logger directory; without either, the writer
    warns once and does nothing.
    """

    FILENAME = "stats.jsonl"

    def __init__(self, logdir: str | None = None) -> None:
        self._logdir = logdir
        self._logdir_given = logdir  # _logdir becomes the logger directory at setup when None
        self._path: str | None = None
        self._pending: dict[str, Any] = {}  # filled before setup too: earlier callbacks may put
        self._lock = WriterLock(type(self).__name__)

    @property
    def path(self) -> str | None:
        """The stats file (None until set up, or when disabled)."""
        return self._path

    @property
    def writes_to_logger_dir(self) -> bool:
        """Whether this writer writes into the logger directory (``set_logger_dir``): it was
        given no ``logdir``. Trainers of several processes drop such writers on the processes
        that share the chief's logger directory; a writer given its own ``logdir`` stays."""
        return not self._logdir_given

    # -- reading ---------------------------------------------------------------
    @staticmethod
    def load_existing_json(dirname: str | None = None) -> list[dict] | None:
        """The records of ``<dirname>/stats.jsonl`` (default: the logger directory), or None.

        A damaged last line (a crash while writing it) is skipped with a warning
        naming it; a damaged line anywhere else is a ValueError naming file and line.
        """
        dirname = dirname or get_logger_dir()
        if dirname is None:
            return None
        path = os.path.join(dirname, JSONWriter.FILENAME)
        if not os.path.isfile(path):
            return None
        return StatsFile(path).read().records

    @staticmethod
    def load_existing_epoch_number(dirname: str | None = None) -> int | None:
        """The last finished epoch recorded in ``<dirname>/stats.jsonl``, or None."""
        records = JSONWriter.load_existing_json(dirname)
        if not records or "epoch_num" not in records[-1]:
            return None
        return int(records[-1]["epoch_num"])

    # -- hooks -------------------------------------------------------------------
    def _setup_graph(self) -> None:
        self._logdir = self._logdir or get_logger_dir()
        if self._logdir is None:
            logger.warning("JSONWriter: no logger directory is set (set_logger_dir) and no logdir "
                           "was given; no stats will be written.")
            return
        os.makedirs(self._logdir, exist_ok=True)
        if self.trainer.is_chief:  # else in before_train, should this process become the chief
            self._lock.take(self._logdir)
        self._path = os.path.join(self._logdir, self.FILENAME)

    def _before_train(self) -> None:
        if self._path is None:
            return
        self._lock.take(os.path.dirname(self._path))
        try:
            StatsFile(self._path).repair()
        except STORAGE_ERRORS as e:
            raise StorageError(self.name, "the stats file", self._path, e, self._logdir) from e
        previous = self.load_existing_epoch_number(self._logdir)
        if previous is not None:
            logger.info("JSONWriter: appending to %s (last finished epoch %d)", self._path, previous)
            if previous != self._last_finished_epoch():
                logger.warning("JSONWriter: %s ends at epoch %d, but this run continues from epoch %d; "
                               "its lines will follow the old ones", self._path, previous,
                               self._last_finished_epoch())
        self._trigger()

    def process_scalar(self, name: str, value: float | int) -> None:
        self._pending[name] = value

    def _trigger(self) -> None:
        if self._pending:
            self._write_line()

    def _trigger_epoch(self) -> None:
        self._write_line()

    def _after_train(self) -> None:
        try:
            self._trigger()
        finally:
            self._lock.give_back()

    def _last_finished_epoch(self) -> int:
        loop = self.trainer.loop
        return loop.epoch_num if loop.epoch_finished else loop.epoch_num - 1

    def _write_line(self) -> None:
        record, self._pending = self._pending, {}
        if self._path is None:
            return
        record.update(epoch_num=self._last_finished_epoch(), global_step=self.global_step)
        try:
            with open(self._path, "a", encoding="utf-8") as f:
                f.write(json.dumps(record) + "\n")
                f.flush()
                os.fsync(f.fileno())
        except STORAGE_ERRORS as e:
            raise StorageError(self.name, "a line of", self._path, e, self._logdir) from e


class StatsRead(NamedTuple):
    """What :meth:`StatsFile.read` found: the good ``records``, and the damaged last line
    (``damaged_line`` number, its byte ``damaged_offset``) or None."""

    records: list[dict]
    damaged_line: int | None
    damaged_offset: int | None
    ends_with_newline: bool


class StatsFile:
    """``stats.jsonl`` read (and, when resuming, repaired) by the one rule of :class:`JSONWriter`."""

    def __init__(self, path: str) -> None:
        self.path = path

    def read(self) -> StatsRead:
        """The records; a damaged last line is skipped with a warning, one before it is an error."""
        with open(self.path, "rb") as f:
            data = f.read()
        lines, offset = [], 0
        for n, raw in enumerate(data.split(b"\n"), 1):  # only "\n" ends a line (JSON escapes the rest)
            if raw.strip():
                lines.append((n, offset, raw))
            offset += len(raw) + 1
        records: list[dict] = []
        for i, (n, start, raw) in enumerate(lines):
            record, problem = _parse(raw)
            if record is not None:
                records.append(record)
                continue
            if i == len(lines) - 1:
                logger.warning("%s:%d: dropping the damaged last line (%s): %r", self.path, n, problem,
                               raw[:200])
                return StatsRead(records, n, start, data.endswith(b"\n"))
            raise ValueError(f"{self.path}:{n}: {problem}; the stats file is corrupt before its last "
                             f"line: {raw[:200]!r}. Repair or remove that line, then run again.")
        return StatsRead(records, None, None, data.endswith(b"\n") or not data)

    def repair(self) -> None:
        """Cut a damaged last line off the file and end it with a newline, so that appended lines
        follow the last good one; a damaged line before the last one raises (see :meth:`read`)."""
        found = self.read() if os.path.isfile(self.path) else None
        if found is None:
            return
        with open(self.path, "rb+") as f:
            if found.damaged_offset is not None:
                f.truncate(found.damaged_offset)
                f.seek(0, os.SEEK_END)
                if f.tell() and not _ends_with_newline(f):
                    f.write(b"\n")
            elif not found.ends_with_newline:  # a complete record without its newline
                f.seek(0, os.SEEK_END)
                f.write(b"\n")
            f.flush()
            os.fsync(f.fileno())


def _ends_with_newline(f: Any) -> bool:
    f.seek(-1, os.SEEK_END)
    last = f.read(1)
    f.seek(0, os.SEEK_END)
    return bool(last == b"\n")


def _parse(raw: bytes) -> tuple[dict | None, str]:
    """A line of stats.jsonl: (its record, "") when it holds a JSON object, else (None, why not)."""
    try:
        record = json.loads(raw)
    except ValueError as e:  # JSONDecodeError, UnicodeDecodeError
        return None, f"not valid JSON ({e})"
    if not isinstance(record, dict):
        return None, "not a JSON object"
    return record, ""
