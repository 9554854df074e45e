"""TFEventWriter: the monitor that writes TensorBoard event files."""
from __future__ import annotations

import itertools
import logging
import time
from typing import Any

import numpy as np
import tensorflow as tf

from trainstack.loop import MonitorBase
from trainstack.loop.checks import check_int, check_number

from .logdir import get_logger_dir
from .logdir_lock import WriterLock
from .storage import STORAGE_ERRORS, StorageError

__all__ = ["TFEventWriter"]

logger = logging.getLogger("trainstack.callbacks")

_Summary = tf.compat.v1.Summary


class TFEventWriter(MonitorBase):
    """Write scalars, images and summary events to TensorBoard event files.

    Everything is written at ``trainer.global_step``. Data is queued as
    summary protos and written (one TensorFlow call per step in the queue)
    when the queue holds ``max_queue`` values, when ``flush_secs`` have
    passed since the last write, and at each epoch's end; the file is
    opened at the first write (TensorFlow's first file writer of a process
    takes a noticeable part of a second, which would delay the first step)
    and closed after training. Putting a scalar is thus pure Python, not a
    TensorFlow op. ``logdir`` defaults to the logger directory; when
    neither is set, the writer warns once and does nothing (as in
    tensorpack). With ``split_files``, each epoch goes to a new event file
    (for filesystems where appending is expensive). Events that cannot be
    written (a full disk) stop the run with
    :class:`~trainstack.callbacks.storage.StorageError`, as a failed checkpoint
    does; while training the writer holds the directory's lock (see
    :mod:`~trainstack.callbacks.logdir_lock`).
    """

    def __init__(self, logdir: str | None = None, max_queue: int = 10, flush_secs: float = 120,
                 split_files: bool = False) -> None:
        max_queue = check_int("TFEventWriter", "max_queue", max_queue, minimum=1)
        check_number("TFEventWriter", "flush_secs", flush_secs, greater_than=0)
        self._logdir = logdir
        self._logdir_given = logdir  # _logdir becomes the logger directory at setup when None
        self._max_queue = max_queue
        self._flush_secs = flush_secs
        self._split_files = split_files
        self._writer: Any = None  # opened at the first write
        self._ready = False  # set up, with a directory to write to
        self._enabled = True
        self._lock = WriterLock(type(self).__name__)
        # (global_step, value); the step is None for data put before our setup_graph
        # (by earlier callbacks' setup_graph) until setup_graph fills it in
        self._queue: list[tuple[int | None, Any]] = []
        self._last_write = time.monotonic()

    @property
    def logdir(self) -> str | None:
        """Where the event files go (None until set up, or when disabled)."""
        return self._logdir

    @property
    def writes_to_logger_dir(self) -> bool:
        """Whether this writer writes into the logger directory (``set_logger_dir``): it was
        given no ``logdir``. Trainers of several processes drop such writers on the processes
        that share the chief's logger directory; a writer given its own ``logdir`` stays."""
        return not self._logdir_given

    def _setup_graph(self) -> None:
        self._logdir = self._logdir or get_logger_dir()
        if self._logdir is None:
            logger.warning("TFEventWriter: no logger directory is set (set_logger_dir) and no logdir "
                           "was given; no TensorBoard events will be written.")
            self._enabled, self._queue = False, []
            return
        if self.trainer.is_chief:  # else in before_train, should this process become the chief
            self._lock.take(self._logdir)
        self._ready = True
        self._queue = [(self.global_step, value) for _, value in self._queue]

    def _before_train(self) -> None:
        if self._ready:
            self._lock.take(str(self._logdir))

    def process_scalar(self, name: str, value: float | int) -> None:
        self._put([_Summary.Value(tag=name, simple_value=value)])

    def process_image(self, name: str, value: Any) -> None:
        """Images are written as PNG, one summary value per image (``name/<i>`` for a batch)."""
        images = _to_nhwc_uint8(name, value)
        tags = [name] if len(images) == 1 else [f"{name}/{i}" for i in range(len(images))]
        self._put([_Summary.Value(tag=tag, image=_png(img)) for tag, img in zip(tags, images)])

    def process_event(self, event: Any) -> None:
        """Write a ``tf.compat.v1.Summary``, or an ``Event`` carrying one, at the current step."""
        if isinstance(event, tf.compat.v1.Event) and event.HasField("summary"):
            event = event.summary
        if not isinstance(event, _Summary):
            raise TypeError("TFEventWriter.process_event expects a tf.compat.v1.Summary or an Event "
                            f"with a summary, got {type(event).__name__}")
        self._put(event.value)

    def _put(self, values: Any) -> None:
        if not self._enabled:
            return
        step = self.global_step if self._ready else None
        self._queue.extend((step, v) for v in values)
        if len(self._queue) >= self._max_queue or time.monotonic() - self._last_write > self._flush_secs:
            self._write()

    def _write(self) -> None:
        """Write the queue to the event file (and flush it: ``as_default`` does on exit)."""
        if not self._ready:
            return
        queue, self._queue = self._queue, []
        self._last_write = time.monotonic()
        if queue:
            self._storage(self._write_queue, queue)

    def _write_queue(self, queue: list) -> None:
        if self._writer is None:
            self._writer = tf.summary.create_file_writer(self._logdir)
        with self._writer.as_default():
            for step, values in itertools.groupby(queue, key=lambda item: item[0]):
                summary = _Summary(value=[v for _, v in values])
                tf.summary.experimental.write_raw_pb(summary.SerializeToString(), step=step)

    def _storage(self, write: Any, *args: Any) -> Any:
        """``write(*args)``; a storage error stops the run (StorageError, see storage.py)."""
        try:
            return write(*args)
        except STORAGE_ERRORS as e:
            raise StorageError(self.name, "TensorBoard events in", str(self._logdir), e, self._logdir) from e

    def _trigger_epoch(self) -> None:
        self._write()
        if self._split_files and self._writer is not None:
            writer, self._writer = self._writer, None  # the next write opens a new event file
            self._storage(writer.close)

    def _after_train(self) -> None:
        if not self._ready:
            return
        try:
            self._write()
        finally:
            writer, self._writer, self._enabled, self._ready = self._writer, None, False, False
            try:
                if writer is not None:
                    self._storage(writer.close)
            finally:
                self._lock.give_back()


def _to_nhwc_uint8(name: str, value: Any) -> np.ndarray:
    """An HW, HWC or NHWC image array with values in [0, 255] -> NHWC uint8."""
    images = np.asarray(value)
    if images.ndim == 2:
        images = images[None, :, :, None]
    elif images.ndim == 3:
        images = images[None]
    if images.ndim != 4 or images.shape[-1] not in (1, 3, 4) or 0 in images.shape:
        raise ValueError(f"image {name!r} must be HW, HWC or NHWC with 1, 3 or 4 channels, "
                         f"got shape {np.shape(value)}")
    if images.dtype != np.uint8:
        images = np.clip(np.rint(images), 0, 255).astype(np.uint8)
    return images


def _png(image: np.ndarray) -> Any:
    height, width, channels = image.shape
    return _Summary.Image(height=height, width=width, colorspace=channels,
                          encoded_image_string=tf.io.encode_png(image).numpy())
