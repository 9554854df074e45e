"""Reader threads for the workers of :class:`~trainstack.dataflow.MultiProcessRunner`: one thread
per worker drains that worker's connection into one bounded queue, so that every worker keeps
producing while the trainer's thread reads another worker's frame or trains.

Without them the trainer's thread reads one frame at a time: while it copies a 4 MB datapoint out
of one pipe, the other workers fill their pipes (1 MiB at most) and wait, and the copies of all
the workers take turns (``benchmarks/dataflow_compare.py``, ``large``: 2.5x with the threads).
The kernel copy of a frame's large arrays (``readv``) runs without the GIL, so the threads copy in
parallel with each other and with the trainer's Python. This is what ZeroMQ's I/O thread did for
tensorpack's ``MultiProcessRunnerZMQ``, and the queue's capacity is what its ``hwm`` was.

Each queue item is ``(worker, frame)``, or ``(worker, error)`` once the worker's connection
failed (``EOFError``: it exited, or its process ended with nothing left to read); the worker's thread then
ends. The worker's own error frames arrive as frames, in their order.

Gated readers (``gated=True``, for :class:`~trainstack.dataflow.MultiProcessDataFlow`, which
delivers pass ``p`` whole before any datapoint of pass ``p + 1``): after a worker's
``end_of_pass`` frame of pass ``p``, its thread reads on only once the iteration opened pass
``p + 1`` (:meth:`FrameReaders.open_pass`), so that the queue never holds a pass ahead of the
iteration, and a worker that runs ahead waits on its full pipe, as it did without the threads.
"""
from __future__ import annotations

import contextlib
import queue
import threading
from multiprocessing.connection import wait
from typing import TYPE_CHECKING, Any

from .frame_io import recv_frame

if TYPE_CHECKING:
    from ._worker_pool import Worker

_PUT_POLL_SECONDS = 0.1  # how often a reader blocked on a full queue checks for a stop


class FrameReaders:
    """One daemon thread per worker of ``workers`` reading its frames into a queue of
    ``capacity`` items; :meth:`get` takes the next ``(worker, frame or error)``.

    Stop them with :meth:`stop` *after* the worker processes ended and *before* their
    connections are closed: a thread waits on its worker's connection and process.
    ``gated``: a worker's frames after its ``end_of_pass`` of pass ``p`` are read only once
    :meth:`open_pass` opened pass ``p + 1`` (pass 0 is open).
    """

    def __init__(self, who: str, workers: list[Worker], capacity: int, *, gated: bool = False) -> None:
        self._queue: queue.Queue[tuple[Worker | None, Any]] = queue.Queue(capacity)
        self._stopping = threading.Event()
        self._gate = threading.Condition()
        self._open_pass: int | None = 0 if gated else None  # None: not gated
        self._threads = [threading.Thread(target=self._read, args=(w, f"{who} worker {w.index}"),
                                          name=f"trainstack-dataflow-reader-{w.index}", daemon=True)
                         for w in workers]
        for t in self._threads:
            t.start()

    def get(self) -> tuple[Worker | None, Any]:
        """The next ``(worker, frame)`` or ``(worker, error)``; ``(None, EOFError)`` once stopped."""
        return self._queue.get()

    def open_pass(self, pass_num: int) -> None:
        """Let gated threads read the frames of passes up to ``pass_num``."""
        with self._gate:
            if self._open_pass is not None and pass_num > self._open_pass:
                self._open_pass = pass_num
                self._gate.notify_all()

    def stop(self, timeout: float = 5.0) -> None:
        """Make the threads end, wait for them, and wake a caller of :meth:`get` with an
        ``EOFError``. The workers must have ended (their threads are waiting on them)."""
        self._stopping.set()
        with self._gate:
            self._gate.notify_all()
        for t in self._threads:
            t.join(timeout)
        while True:  # the frames still queued are dropped with the dataflow
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break
        with contextlib.suppress(queue.Full):  # full again only if a reader did not end in time
            self._queue.put_nowait((None, EOFError("the dataflow was closed")))

    def _read(self, w: Worker, peer: str) -> None:
        conn, sentinel = w.conn, w.process.sentinel
        while not self._stopping.is_set():
            item: Any
            try:
                if conn in wait([conn, sentinel]):
                    item = recv_frame(conn, peer=peer)
                else:  # the process ended and left nothing to read
                    item = EOFError("the worker process ended")
            except Exception as e:  # noqa: BLE001 - handed to the reading thread, which raises it
                item = e
            if not self._put(w, item) or isinstance(item, BaseException):
                return
            if self._open_pass is not None and item["kind"] == "end_of_pass" and not self._opened(w, item["pass_num"] + 1):
                return

    def _opened(self, w: Worker, pass_num: int) -> bool:
        """Wait until pass ``pass_num`` is open. False when the readers are stopping, or when the
        worker died meanwhile (then its ``EOFError`` is queued at once, as an ungated reader would)."""
        while not self._stopping.is_set():
            with self._gate:
                if self._open_pass >= pass_num:  # type: ignore[operator]  # gated: an int
                    return True
                self._gate.wait(_PUT_POLL_SECONDS)
            if wait([w.process.sentinel], 0):
                self._put(w, EOFError("the worker process ended"))
                return False
        return False

    def _put(self, w: Worker, item: Any) -> bool:
        while not self._stopping.is_set():
            try:
                self._queue.put((w, item), timeout=_PUT_POLL_SECONDS)
                return True
            except queue.Full:
                continue
        return False
