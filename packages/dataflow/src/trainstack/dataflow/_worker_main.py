"""What runs inside a worker process of the multi-process dataflows.

:func:`run_worker` runs a dataflow pass after pass and sends its datapoints
to the trainer in msgpack ``chunk`` frames tagged with their pass number
(several small datapoints per frame, see :data:`CHUNK_SECONDS`), then an
``end_of_pass`` frame; :func:`run_map_worker` maps the datapoints the trainer
sends it (``task`` frames) and sends each result back (``result`` frames).
An exception is sent as an ``error`` frame with its traceback, and the worker
exits with code 1. A worker exits quietly when the trainer goes away.

The process imports this module by its name; nothing in
``trainstack.dataflow`` imports TensorFlow, so a worker imports only what
the user's dataflow itself imports.
"""
from __future__ import annotations

import itertools
import os
import pickle
import queue
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from multiprocessing import current_process, parent_process
from multiprocessing.connection import Connection, wait
from typing import Any

from .base import fix_rng_seed
from .codec import chunk_frame, decode_frame, encode_frame, pack_datapoint_oob, results_frame
from .errors import FrameError
from .frame_io import OOB_MIN_BYTES, send_frame
from .protocol import EmptyPasses, reset_dataflow


class _TrainerGone(Exception):
    """Sending or receiving failed: the trainer closed its end or exited."""


def run_worker(conn: Connection, payload: bytes, index: int, count: int, sharded: bool,
               seed: int | None, max_empty_passes: int | None = None) -> None:
    """Worker ``index`` of ``count``: unpickle ``(dataflow, worker_factory, map_func)`` from
    ``payload`` and send the worker's datapoints through ``conn`` until the trainer goes away.

    ``sharded``: keep the datapoints ``k % count == index`` of each pass. ``seed``: given to
    :func:`fix_rng_seed` before ``reset_state`` (None: this process seeds on its own).
    ``max_empty_passes``: how many passes in a row may yield nothing before the worker fails with
    :class:`EmptyDataFlowError` (None: any number; an empty pass is then just an empty pass).
    """
    def work() -> Iterator[tuple[bytes, list[memoryview]]]:
        dataflow, worker_factory, map_func = pickle.loads(payload)
        _seed_rngs(seed)
        if worker_factory is not None:
            dataflow = worker_factory(index, count)
        reset_dataflow(dataflow)
        return _frames(dataflow, index, count, sharded, map_func, max_empty_passes)

    _serve(conn, index, count, work)


def run_map_worker(conn: Connection, payload: bytes, index: int, count: int, seed: int | None) -> None:
    """Map worker ``index`` of ``count``: unpickle ``map_func`` from ``payload``, then answer each
    ``task`` frame from ``conn`` with a ``result`` frame holding ``map_func(datapoint)``."""
    def work() -> Iterator[tuple[bytes, list[memoryview]]]:
        map_func = pickle.loads(payload)
        _seed_rngs(seed)
        tasks: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        # A thread keeps reading tasks, so that the trainer never blocks sending one while this
        # process blocks sending a result: the pipe's two directions cannot deadlock.
        threading.Thread(target=_read_tasks, args=(conn, tasks), name="task-reader", daemon=True).start()
        return _results(tasks, map_func)

    _serve(conn, index, count, work)


def _serve(conn: Connection, index: int, count: int,
           work: Callable[[], Iterator[tuple[bytes, list[memoryview]]]]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the trainer's: it stops the workers
    # A worker may run a dataflow with workers of its own (MultiProcessRunnerZMQ over another
    # runner, as tensorpack allows); multiprocessing forbids that to a daemonic process. Its own
    # workers are daemonic and watch it, so they end with it all the same.
    current_process().daemon = False
    _exit_with_parent()
    try:
        for frame, buffers in work():
            _send(conn, frame, buffers)
    except _TrainerGone:
        return
    except BaseException:  # noqa: BLE001 - reported to the trainer, which raises it
        message = f"worker {index} of {count} (pid {os.getpid()}) failed:\n{traceback.format_exc()}"
        try:
            _send(conn, encode_frame("error", message=message), [])
        except _TrainerGone:
            pass
        raise SystemExit(1) from None


def _seed_rngs(seed: int | None) -> None:
    if seed is None:
        return
    fix_rng_seed(seed)
    # tensorpack's own DataFlows take their seeds from tensorpack's get_rng
    tensorpack_utils = sys.modules.get("tensorpack.utils.utils")
    if tensorpack_utils is not None and callable(getattr(tensorpack_utils, "fix_rng_seed", None)):
        tensorpack_utils.fix_rng_seed(seed)


#: A stream worker sends the small datapoints it makes quickly several per ``chunk`` frame, so
#: that the trainer pays one message (a wake-up, a read, a hand-over) per chunk, not per datapoint:
#: a chunk is sent once it holds this many datapoints or bytes, or once waiting for the next
#: datapoint would keep its first one longer than this many seconds (a datapoint that takes
#: longer than that to make goes alone, as soon as it is made). "Would" is judged by how long the
#: last datapoint took: a dataflow that stalls all of a sudden holds its chunk as long.
CHUNK_DATAPOINTS = 64
CHUNK_BYTES = 1 << 16
CHUNK_SECONDS = 0.002


class _Chunk:
    """The small datapoints (packed) a stream worker holds back to send in one ``chunk`` frame."""

    def __init__(self, pass_num: int) -> None:
        self.pass_num = pass_num
        self.packed: list[bytes] = []
        self.size = 0
        self.first = 0.0  # when its first datapoint was made

    def add(self, packed: bytes, now: float, took: float) -> bool:
        """Hold ``packed``, made at ``now`` in ``took`` seconds; whether the chunk is to go now
        (the next datapoint may take as long to make)."""
        if not self.packed:
            self.first = now
        self.packed.append(packed)
        self.size += len(packed)
        return (len(self.packed) >= CHUNK_DATAPOINTS or self.size >= CHUNK_BYTES
                or now - self.first + took >= CHUNK_SECONDS)

    def take(self) -> Iterator[tuple[bytes, list[memoryview]]]:
        """The chunk's frame (none when it is empty); the chunk is empty after."""
        if self.packed:
            packed, self.packed, self.size = self.packed, [], 0
            yield chunk_frame(self.pass_num, packed), []


def _frames(dataflow: Any, index: int, count: int, sharded: bool,
            map_func: Callable[[Any], Any] | None,
            max_empty_passes: int | None) -> Iterator[tuple[bytes, list[memoryview]]]:
    """The frames of pass after pass; a sharded worker keeps datapoints ``k % count == index``."""
    empty_passes = None if max_empty_passes is None else EmptyPasses("the dataflow", dataflow, max_empty_passes)
    for pass_num in itertools.count():
        empty = True
        chunk = _Chunk(pass_num)
        resumed = time.perf_counter()  # since when this worker has been making the next datapoint
        try:
            for k, datapoint in enumerate(dataflow):
                empty = False
                if sharded and k % count != index:
                    continue
                if map_func is not None:
                    datapoint = map_func(datapoint)
                packed, buffers = pack_datapoint_oob(datapoint, OOB_MIN_BYTES)
                now = time.perf_counter()
                took, resumed = now - resumed, now
                if buffers:  # views of its arrays: sent before the dataflow can change them
                    yield from chunk.take()
                    yield chunk_frame(pass_num, [packed]), buffers
                elif chunk.add(packed, now, took):
                    yield from chunk.take()
                else:
                    continue
                resumed = time.perf_counter()  # the time a send blocked is not the dataflow's
        except Exception:
            yield from chunk.take()  # what was made before the failure reaches the trainer before its error
            raise
        yield from chunk.take()
        if empty_passes is not None:
            empty_passes.end_pass(empty)
        yield encode_frame("end_of_pass", pass_num=pass_num), []


def _read_tasks(conn: Connection, tasks: queue.SimpleQueue[bytes | None]) -> None:
    try:
        while True:
            tasks.put(conn.recv_bytes())
    except (EOFError, OSError):
        tasks.put(None)  # the trainer closed its end: no more tasks


def _results(tasks: queue.SimpleQueue[bytes | None],
             map_func: Callable[[Any], Any]) -> Iterator[tuple[bytes, list[memoryview]]]:
    """``results`` frames answering the ``tasks`` frames (the trainer sends several datapoints
    per frame when it has several to send, so that both directions cost one message per chunk)."""
    while True:
        data = tasks.get()
        if data is None:
            raise _TrainerGone()
        frame = decode_frame(data, peer="the trainer", trusted=True)
        if frame["kind"] == "tasks":
            # Each result is packed as soon as it is mapped (a map_func may reuse its output
            # arrays). One frame answers the whole chunk, unless a result has out-of-band arrays
            # (sent as views of the arrays themselves): then the frame goes at once, with it.
            packed: list[bytes] = []
            answered = 0  # tasks answered by ``packed``
            for datapoint in frame["datapoints"]:
                result = map_func(datapoint)
                answered += 1
                if result is None:
                    continue
                data, buffers = pack_datapoint_oob(result, OOB_MIN_BYTES)
                packed.append(data)
                if buffers:
                    yield results_frame(answered, packed), buffers
                    packed, answered = [], 0
            if answered:
                yield results_frame(answered, packed), []
        else:
            raise FrameError(f"a map worker expects 'tasks' frames, got a {frame['kind']!r} frame")


def _send(conn: Connection, frame: bytes, buffers: list[memoryview]) -> None:
    try:
        send_frame(conn, frame, buffers)
    except OSError as e:  # BrokenPipeError, ConnectionResetError, a closed handle
        raise _TrainerGone() from e


def _exit_with_parent() -> None:
    """Exit as soon as the trainer's process ends, even while busy inside the dataflow."""
    parent = parent_process()
    if parent is None:
        return

    def watch() -> None:
        wait([parent.sentinel])
        os._exit(0)

    threading.Thread(target=watch, name="exit-with-trainer", daemon=True).start()
