"""GraphProfiler: a TensorFlow profiler trace of a few training steps, for TensorBoard."""
from __future__ import annotations

import logging
import os

import tensorflow as tf

from trainstack.loop import Callback

from .logdir import get_logger_dir

__all__ = ["GraphProfiler"]

logger = logging.getLogger("trainstack.callbacks")


class GraphProfiler(Callback):
    """Trace global steps ``first..last`` (both included) with ``tf.profiler``.

    Step ``k`` is the k-th hooked run of the whole training (``global_step``
    is ``k`` after it), so the default ``(10, 20)`` skips the first steps,
    which trace and warm up. The trace goes to ``<dump_dir>/plugins/profile/``
    (``dump_dir`` defaults to the logger directory), where TensorBoard's
    profile plugin finds it. A trace still running when training ends is
    stopped and written.
    """

    def __init__(self, steps: tuple[int, int] = (10, 20), dump_dir: str | None = None) -> None:
        try:
            first, last = (int(s) for s in steps)
        except (TypeError, ValueError):
            raise ValueError(f"GraphProfiler: steps must be a pair (first, last), got {steps!r}") \
                from None
        if not 1 <= first <= last:
            raise ValueError(f"GraphProfiler: steps must satisfy 1 <= first <= last, got {steps!r}")
        self._first, self._last = first, last
        self._dump_dir = dump_dir
        self._tracing = False

    def _setup_graph(self) -> None:
        self._dump_dir = self._dump_dir or get_logger_dir()
        if self._dump_dir is None:
            logger.warning("GraphProfiler: no logger directory is set (set_logger_dir) and no "
                           "dump_dir was given; nothing will be profiled.")

    def _before_train(self) -> None:
        if self._dump_dir is not None and self.global_step >= self._first:
            logger.warning("GraphProfiler: steps %d..%d are already done (global_step=%d); "
                           "nothing will be profiled.", self._first, self._last, self.global_step)
        self._maybe_start()

    def _trigger_step(self) -> None:
        if self._tracing and self.global_step >= self._last:
            self._stop()
        else:
            self._maybe_start()

    def _after_train(self) -> None:
        if self._tracing:
            self._stop()

    def _maybe_start(self) -> None:
        if self._tracing or self._dump_dir is None or self.global_step != self._first - 1:
            return
        try:
            tf.profiler.experimental.start(self._dump_dir)
        except tf.errors.OpError as e:  # e.g. another profiler session is running
            logger.warning("GraphProfiler: could not start the profiler: %s", e)
            return
        self._tracing = True

    def _stop(self) -> None:
        self._tracing = False
        tf.profiler.experimental.stop()
        assert self._dump_dir is not None  # it traced
        logger.info("GraphProfiler: trace of steps %d..%d written to %s", self._first,
                    min(self.global_step, self._last),
                    os.path.join(self._dump_dir, "plugins", "profile"))
