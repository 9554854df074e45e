"""The loop of a :class:`~trainstack.inputs.MultiProcessDataFlow` worker process.

A worker runs its dataflow pass after pass and sends each datapoint to the
trainer as a msgpack frame tagged with its pass number, then an
``end_of_pass`` frame; an exception is sent as an ``error`` frame with its
traceback, and the worker exits with code 1. The worker exits quietly when
the trainer goes away. It imports no TensorFlow (see ``_worker_entry.py``).
"""
from __future__ import annotations

import itertools
import os
import pickle
import signal
import threading
import traceback
from multiprocessing import parent_process
from multiprocessing.connection import Connection, wait
from typing import Any, Callable, Iterator

from .codec import encode_frame
from .dataflow import reset_dataflow


class _TrainerGone(Exception):
    """Sending failed: the trainer closed its end or exited."""


def run_worker(conn: Connection, payload: bytes, index: int, count: int) -> None:
    """Worker ``index`` of ``count``: unpickle ``(dataflow, worker_factory, map_func)`` from
    ``payload`` and send the worker's datapoints through ``conn`` until the trainer goes away."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the trainer's: it stops the workers
    _exit_with_parent()
    try:
        dataflow, worker_factory, map_func = pickle.loads(payload)
        if worker_factory is not None:
            dataflow = worker_factory(index, count)
        reset_dataflow(dataflow)
        for frame in _frames(dataflow, index, count, worker_factory is None, map_func):
            _send(conn, frame)
    except _TrainerGone:
        return
    except BaseException:  # noqa: BLE001 - reported to the trainer, which raises it
        message = f"worker {index} of {count} (pid {os.getpid()}) failed:\n{traceback.format_exc()}"
        try:
            _send(conn, encode_frame("error", message=message))
        except _TrainerGone:
            pass
        raise SystemExit(1) from None


def _frames(dataflow: Any, index: int, count: int, sharded: bool,
            map_func: Callable[[Any], Any] | None) -> Iterator[bytes]:
    """The frames of pass after pass; a sharded worker keeps datapoints ``k % count == index``."""
    for pass_num in itertools.count():
        for k, datapoint in enumerate(dataflow):
            if sharded and k % count != index:
                continue
            if map_func is not None:
                datapoint = map_func(datapoint)
            yield encode_frame("data", pass_num=pass_num, datapoint=datapoint)
        yield encode_frame("end_of_pass", pass_num=pass_num)


def _send(conn: Connection, frame: bytes) -> None:
    try:
        conn.send_bytes(frame)
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
