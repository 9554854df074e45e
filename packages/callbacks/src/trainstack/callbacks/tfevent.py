"""TFEventWriter: the monitor that writes TensorBoard event files."""
from __future__ import annotations

import logging
from typing import Any, Callable

import numpy as np
import tensorflow as tf

from trainstack.loop import MonitorBase

from .logdir import get_logger_dir

__all__ = ["TFEventWriter"]

logger = logging.getLogger("trainstack.callbacks")


class TFEventWriter(MonitorBase):
    """Write scalars, images and summary events to TensorBoard event files.

    Everything is written at ``trainer.global_step``. The file is flushed at
    each epoch's end and closed after training. ``logdir`` defaults to the
    logger directory; when neither is set, the writer warns once and does
    nothing (as in tensorpack). With ``split_files``, each epoch goes to a
    new event file (for filesystems where appending is expensive).
    """

    def __init__(self, logdir: str | None = None, max_queue: int = 10, flush_secs: float = 120,
                 split_files: bool = False) -> None:
        if not isinstance(max_queue, int) or max_queue < 1:
            raise ValueError(f"TFEventWriter: max_queue must be a positive int, got {max_queue!r}")
        if not flush_secs > 0:
            raise ValueError(f"TFEventWriter: flush_secs must be positive, got {flush_secs!r}")
        self._logdir = logdir
        self._max_queue = max_queue
        self._flush_millis = int(flush_secs * 1000)
        self._split_files = split_files
        self._writer: Any = None
        # data put before our setup_graph (by earlier callbacks' setup_graph), written once set up
        self._early: list[Callable[[], Any]] | None = []

    @property
    def logdir(self) -> str | None:
        """Where the event files go (None until set up, or when disabled)."""
        return self._logdir

    def _setup_graph(self) -> None:
        early, self._early = self._early, None
        self._logdir = self._logdir or get_logger_dir()
        if self._logdir is None:
            logger.warning("TFEventWriter: no logger directory is set (set_logger_dir) and no logdir "
                           "was given; no TensorBoard events will be written.")
            return
        self._open()
        for write in early:
            self._write(write)

    def _open(self) -> None:
        self._writer = tf.summary.create_file_writer(
            self._logdir, max_queue=self._max_queue, flush_millis=self._flush_millis)

    def process_scalar(self, name: str, value: float | int) -> None:
        self._write(lambda: tf.summary.scalar(name, value))

    def process_image(self, name: str, value: Any) -> None:
        images = _to_nhwc_uint8(name, value)
        self._write(lambda: tf.summary.image(name, images, max_outputs=len(images)))

    def process_event(self, event: Any) -> None:
        """Write a ``tf.compat.v1.Summary``, or an ``Event`` carrying one, at the current step."""
        if isinstance(event, tf.compat.v1.Event) and event.HasField("summary"):
            event = event.summary
        if not isinstance(event, tf.compat.v1.Summary):
            raise TypeError("TFEventWriter.process_event expects a tf.compat.v1.Summary or an Event "
                            f"with a summary, got {type(event).__name__}")
        data = event.SerializeToString()
        self._write(lambda: tf.summary.experimental.write_raw_pb(data))

    def _write(self, write: Callable[[], Any]) -> None:
        if self._early is not None:
            self._early.append(write)
        elif self._writer is not None:
            with self._writer.as_default(step=self.global_step):
                write()

    def _trigger_epoch(self) -> None:
        if self._writer is None:
            return
        self._writer.flush()
        if self._split_files:
            self._writer.close()
            self._open()  # a new writer starts a new event file

    def _after_train(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None


def _to_nhwc_uint8(name: str, value: Any) -> np.ndarray:
    """An HW, HWC or NHWC image array with values in [0, 255] -> NHWC uint8."""
    images = np.asarray(value)
    if images.ndim == 2:
        images = images[None, :, :, None]
    elif images.ndim == 3:
        images = images[None]
    if images.ndim != 4 or images.shape[-1] not in (1, 3, 4):
        raise ValueError(f"image {name!r} must be HW, HWC or NHWC with 1, 3 or 4 channels, "
                         f"got shape {np.shape(value)}")
    if images.dtype != np.uint8:
        images = np.clip(np.rint(images), 0, 255).astype(np.uint8)
    return images
