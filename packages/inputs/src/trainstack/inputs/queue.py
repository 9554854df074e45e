"""QueueInput: a background thread fills a TensorFlow queue; the traced step dequeues.

The thread converts datapoints (checked against the signature) and enqueues
them while the step runs, so Python-side preparation overlaps compute. How
full the queue is, averaged over each epoch, goes to the monitors as
``QueueInput/queue_size``: a queue that stays near empty means training waits
for its input.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

import tensorflow as tf

from trainstack.loop import Callback
from trainstack.loop.checks import check_int

from .base import FeedfreeInput
from .dataflow import close_workers, dataflow_size, numbered_passes, reset_dataflow
from .signature import check_datapoint_at

__all__ = ["QueueInput"]

logger = logging.getLogger("trainstack.inputs")

_DRAIN_POLL_S = 0.02  # stop(): how often it looks at the queue while the thread is not enqueuing


class QueueInput(FeedfreeInput):
    """Enqueue datapoints of ``dataflow`` from a thread into a ``tf.queue.FIFOQueue`` of
    ``queue_size`` elements; each tower dequeues its own element.

    The thread starts before training and stops after it, with the worker
    processes of the dataflow (a MultiProcessDataFlow's, say); the queue is
    closed then, so a QueueInput serves one training run. If the thread fails (a
    datapoint that disagrees with the signature, an error in the dataflow), the
    queue is closed, training stops at the next dequeue, and the error is
    raised from ``after_train`` with the thread's traceback.
    """

    def __init__(self, dataflow: Any, queue_size: int = 50) -> None:
        super().__init__()
        self.queue_size = check_int(type(self).__name__, "queue_size", queue_size, minimum=1)
        self.dataflow = dataflow
        self.queue: tf.queue.FIFOQueue = None  # made by _setup, before any use
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self.error: BaseException | None = None
        self._fill_lock = threading.Lock()  # the sum and count are read and reset together
        self._fill_sum = 0
        self._fill_count = 0
        self._to_skip = 0

    def _setup(self, signature: tuple[tf.TensorSpec, ...]) -> None:
        self.queue = tf.queue.FIFOQueue(self.queue_size, [s.dtype for s in signature],
                                        name=f"{self.name}_queue")

    def _size(self) -> int:
        return dataflow_size(self.dataflow, f"{self.name}'s dataflow")

    def _get_input_tensors(self, tower_index: int) -> list[tf.Tensor]:
        tensors = self.queue.dequeue(name=f"{self.name}_dequeue_tower{tower_index}")
        tensors = [tensors] if isinstance(tensors, tf.Tensor) else list(tensors)
        for t, spec in zip(tensors, self.input_signature):
            t.set_shape(spec.shape)
        return tensors

    # -- the thread ------------------------------------------------------------------
    def datapoints(self) -> Iterator[Sequence[Any]]:
        """What the thread enqueues: checked datapoints of pass after pass of the dataflow."""
        for pass_num, index, dp in self._stream():
            yield check_datapoint_at(pass_num, index, dp, self.input_signature, source=self.name)

    def _stream(self) -> Iterator[tuple[int, int, Any]]:
        """``(pass, index, datapoint)`` of the dataflow, pass after pass, after those to skip
        (see ``_skip``)."""
        reset_dataflow(self.dataflow)
        skip, self._to_skip = self._to_skip, 0
        return numbered_passes(self.dataflow, f"{self.name}'s dataflow", skip=skip)

    def _skip(self, n: int) -> bool:
        self._to_skip = n
        return True

    def _reset_state(self) -> None:
        self.stop()
        self._stop.clear()
        self.error = None
        self._thread = threading.Thread(target=self._enqueue_loop, name=f"{self.name}-enqueue",
                                        daemon=True)
        self._thread.start()

    def _enqueue_loop(self) -> None:
        try:
            for arrays in self.datapoints():
                if self._stop.is_set():
                    return
                self.queue.enqueue(arrays)
                fill = int(self.queue.size())
                with self._fill_lock:
                    self._fill_sum += fill
                    self._fill_count += 1
        except (tf.errors.CancelledError, tf.errors.OutOfRangeError):
            if not self._stop.is_set():
                self.error = RuntimeError(f"{self.name}: its queue was closed while the thread was running")
        except BaseException as e:  # noqa: BLE001 - reported through after_train
            if not self._stop.is_set():
                logger.error("%s: the enqueue thread failed: %s", self.name, e)
                self.error = e
        finally:
            if self.error is not None:
                # wake the step: its dequeue raises OutOfRangeError, a stop exception of trainers
                self.queue.close(cancel_pending_enqueues=True)

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the thread and wait for it, then close the queue.

        The queue is drained while the thread finishes, so an enqueue blocked on a full
        queue completes rather than being cancelled: a cancelled enqueue makes TensorFlow
        log "Local rendezvous is aborting ... CANCELLED" at the end of every run. Only a
        thread still running after ``timeout`` has its enqueue cancelled (with a warning).
        """
        thread, self._thread = self._thread, None
        if thread is None:
            return
        self._stop.set()  # the thread returns before its next enqueue
        deadline = time.monotonic() + timeout
        while thread.is_alive() and time.monotonic() < deadline:
            if int(self.queue.size()) > 0:  # only this thread dequeues now: this never blocks
                self.queue.dequeue()  # room for an enqueue blocked on the full queue
            else:
                thread.join(_DRAIN_POLL_S)  # the thread is in the dataflow, or returning
        self.queue.close(cancel_pending_enqueues=True)  # nothing is pending unless the thread is late
        thread.join(max(0.0, deadline - time.monotonic()))
        if thread.is_alive():
            logger.warning("%s: the enqueue thread did not stop within %.0f s", self.name, timeout)

    def take_mean_fill(self) -> float:
        """Mean queue size seen after each enqueue since the last call (the current size
        when nothing was enqueued since)."""
        with self._fill_lock:
            s, n = self._fill_sum, self._fill_count
            self._fill_sum = self._fill_count = 0
        return s / n if n else float(self.queue.size())

    def _get_callbacks(self) -> list[Callback]:
        return [_QueueCallback(self)]


class _QueueCallback(Callback):
    """Reports the queue's fill each epoch; after training (ended or failed) stops the thread and
    the dataflow's worker processes (:func:`close_workers`), then raises the thread's error."""

    def __init__(self, source: QueueInput) -> None:
        self.source = source

    def _default_name(self) -> str:
        return f"Queue({self.source.name})"

    def _trigger_epoch(self) -> None:
        monitors = self.trainer.monitors  # the loop's Trainer has them (None before setup_callbacks)
        if monitors is not None:
            monitors.put_scalar(f"{self.source.name}/queue_size", self.source.take_mean_fill())

    def _after_train(self) -> None:
        error = self.source.error
        try:
            self.source.stop()
        finally:  # whatever the outcome: no worker of the dataflow outlives training
            close_workers(self.source.dataflow)
        if error is not None:
            raise error  # the thread's own error (and traceback), e.g. an InputSignatureError
