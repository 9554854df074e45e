"""JSONWriter: the monitor that appends the statistics to ``stats.jsonl``."""
from __future__ import annotations

import json
import logging
import os
from typing import Any

from trainstack.loop import MonitorBase

from .logdir import get_logger_dir

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
    rewritten: a crash loses at most the line being written. When resuming,
    a partial last line left by a crash is dropped before appending.
    ``logdir`` defaults to the logger directory; without either, the writer
    warns once and does nothing.
    """

    FILENAME = "stats.jsonl"

    def __init__(self, logdir: str | None = None) -> None:
        self._logdir = logdir
        self._logdir_given = logdir  # _logdir becomes the logger directory at setup when None
        self._path: str | None = None
        self._pending: dict[str, Any] = {}  # filled before setup too: earlier callbacks may put

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

        A last line that does not parse (a crash while writing it) is skipped
        with a warning; a bad line anywhere else is an error naming file and line.
        """
        dirname = dirname or get_logger_dir()
        if dirname is None:
            return None
        path = os.path.join(dirname, JSONWriter.FILENAME)
        if not os.path.isfile(path):
            return None
        with open(path, encoding="utf-8") as f:
            lines = [(n, line) for n, line in enumerate(f, 1) if line.strip()]
        records = []
        for i, (n, line) in enumerate(lines):
            try:
                record = json.loads(line)
            except json.JSONDecodeError as e:
                if i == len(lines) - 1:
                    logger.warning("%s:%d: skipping a truncated last line (%s)", path, n, e)
                    break
                raise ValueError(f"{path}:{n}: not valid JSON ({e}); the stats file is corrupt") from e
            if not isinstance(record, dict):
                raise ValueError(f"{path}:{n}: expected a JSON object per line, got {line.strip()!r}")
            records.append(record)
        return records

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
        self._path = os.path.join(self._logdir, self.FILENAME)

    def _before_train(self) -> None:
        if self._path is None:
            return
        _drop_partial_last_line(self._path)
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
        self._trigger()

    def _last_finished_epoch(self) -> int:
        loop = self.trainer.loop
        return loop.epoch_num if loop.epoch_finished else loop.epoch_num - 1

    def _write_line(self) -> None:
        record, self._pending = self._pending, {}
        if self._path is None:
            return
        record.update(epoch_num=self._last_finished_epoch(), global_step=self.global_step)
        with open(self._path, "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")
            f.flush()
            os.fsync(f.fileno())


def _drop_partial_last_line(path: str) -> None:
    """Cut an unterminated last line (a crash mid-write) so that appending stays line-aligned."""
    if not os.path.isfile(path):
        return
    with open(path, "rb+") as f:
        data = f.read()
        if not data or data.endswith(b"\n"):
            return
        start = data.rfind(b"\n") + 1
        tail = data[start:]
        try:
            json.loads(tail)
        except ValueError:
            logger.warning("JSONWriter: dropping the partial last line of %s: %r", path, tail[:200])
            f.truncate(start)
        else:  # a complete record without its newline
            f.write(b"\n")
