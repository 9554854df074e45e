"""Time-keeping callbacks: estimated time left, and training throughput."""
from __future__ import annotations

import logging
import statistics
import time
from collections import deque

from trainstack.loop import DEFAULT_MAX_EPOCH, Callback
from trainstack.loop.checks import check_bool, check_int, check_number

__all__ = ["EstimatedTimeLeft", "ThroughputTracker", "humanize_time_delta"]

logger = logging.getLogger("trainstack.callbacks")


class EstimatedTimeLeft(Callback):
    """Log an estimate of the time left after each epoch.

    An epoch's duration runs from one ``trigger_epoch`` to the next (from the
    first ``before_epoch`` for the first one), so it includes the epoch-end
    work of the callbacks (validation, checkpoints). The estimate is the
    median (or mean) of the last ``last_k_epochs`` durations times the epochs
    left. Nothing is logged when ``max_epoch`` is left at "until stopped".
    """

    def __init__(self, last_k_epochs: int = 5, median: bool = True) -> None:
        self._durations: deque[float] = deque(
            maxlen=check_int("EstimatedTimeLeft", "last_k_epochs", last_k_epochs, minimum=1))
        self._median = check_bool(type(self).__name__, "median", median)
        self._last_mark: float | None = None

    def _before_train(self) -> None:
        self._durations.clear()
        self._last_mark = None

    def _before_epoch(self) -> None:
        if self._last_mark is None:
            self._last_mark = time.perf_counter()

    def _trigger_epoch(self) -> None:
        now = time.perf_counter()
        assert self._last_mark is not None  # set by _before_epoch
        self._durations.append(now - self._last_mark)
        self._last_mark = now
        max_epoch = self.trainer.max_epoch
        if max_epoch >= DEFAULT_MAX_EPOCH:
            return
        average = statistics.median if self._median else statistics.fmean
        left = (max_epoch - self.epoch_num) * average(self._durations)
        if left > 0:
            logger.info("Estimated time left: %s", humanize_time_delta(left))


class ThroughputTracker(Callback):
    """Put the training speed to the monitors each time it is triggered (after each epoch).

    Writes ``Throughput/steps_per_sec`` (global steps per second), and
    ``Throughput/samples_per_sec`` when ``samples_per_step`` (the total batch
    size of a step) is given. Only the time between ``before_epoch`` and
    ``after_epoch`` counts: the callbacks' epoch-end work is excluded.
    Wrapped in :class:`~trainstack.callbacks.PeriodicTrigger` it reports
    over other periods.
    """

    _chief_only = False  # each process measures its own speed

    def __init__(self, samples_per_step: float | None = None) -> None:
        self._samples_per_step = check_number("ThroughputTracker", "samples_per_step", samples_per_step,
                                              greater_than=0, none_ok=True,
                                              note="the total batch size of a step")
        self._elapsed = 0.0  # timed seconds since the last report
        self._started: float | None = None  # set while an epoch runs
        self._steps_at_report = 0  # global_step at the last report

    def _before_train(self) -> None:
        self._elapsed, self._started = 0.0, None
        self._steps_at_report = self.global_step

    def _before_epoch(self) -> None:
        self._started = time.perf_counter()

    def _after_epoch(self) -> None:
        assert self._started is not None  # set by _before_epoch
        self._elapsed += time.perf_counter() - self._started
        self._started = None

    def _trigger(self) -> None:
        elapsed = self._elapsed
        if self._started is not None:  # triggered inside an epoch
            now = time.perf_counter()
            elapsed += now - self._started
            self._started = now
        self._elapsed = 0.0
        steps = self.global_step - self._steps_at_report
        self._steps_at_report = self.global_step
        if steps <= 0 or elapsed <= 0:
            return
        monitors = self.trainer.monitors
        assert monitors is not None
        monitors.put_scalar("Throughput/steps_per_sec", steps / elapsed)
        if self._samples_per_step is not None:
            monitors.put_scalar("Throughput/samples_per_sec", steps * self._samples_per_step / elapsed)


_UNITS = (("day", 86400), ("hour", 3600), ("minute", 60))


def humanize_time_delta(seconds: float) -> str:
    """Seconds as words: ``3725`` -> ``"1 hour 2 minutes 5 seconds"``, ``0.5`` -> ``"0.5 seconds"``."""
    if seconds < 60:
        return f"{seconds:.3g} second{'' if seconds == 1 else 's'}"
    parts = []
    rest = int(round(seconds))
    for unit, size in _UNITS:
        count, rest = divmod(rest, size)
        if count:
            parts.append(f"{count} {unit}{'' if count == 1 else 's'}")
    if rest:
        parts.append(f"{rest} second{'' if rest == 1 else 's'}")
    return " ".join(parts)
