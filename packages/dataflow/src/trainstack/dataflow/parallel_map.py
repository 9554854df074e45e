"""Parallel map: ``MapData``'s semantics, with ``map_func`` running in several processes or
threads while this process iterates the dataflow.

As in tensorpack, the dataflow itself stays in this process (``reset_state``
and iteration happen here; it need not be picklable): its datapoints are sent
to the workers, ``map_func`` runs there, results come back in the order they
are ready (not the input order), and a ``None`` result drops the datapoint.

- ``strict=False`` (the default): an endless stream, a reordering of
  ``RepeatedData(MapData(ds, map_func), -1)``: the buffer of ``buffer_size``
  datapoints in flight carries over from one pass to the next, so passes mix at
  their edges and ``__iter__`` never ends (``len`` is ``len(ds)``, which an
  input uses as the steps of an epoch).
- ``strict=True``: each ``__iter__`` is exactly one pass of ``ds`` mapped: the
  same datapoints as ``MapData(ds, map_func)``, in another order. (tensorpack's
  strict mode also forbids ``None`` results; here they drop the datapoint.)
"""
from __future__ import annotations

import concurrent.futures
import itertools
import math
import os
from collections.abc import Callable, Iterator
from copy import copy
from multiprocessing.connection import wait
from typing import Any

from trainstack.loop.checks import check_int

from ._worker_main import run_map_worker
from ._worker_pool import Worker, WorkerProcesses, pickle_payload, receive, worker_failure, worker_seeds
from .base import ProxyDataFlow
from .codec import encode_frame
from .errors import FrameError
from .frame_io import send_frame
from .protocol import MAX_EMPTY_PASSES, repeat_passes, reset_dataflow

__all__ = ["MultiProcessMapData", "MultiProcessMapDataZMQ", "MultiThreadMapData"]

#: The most datapoints sent to a map worker in one ``tasks`` frame (and answered in one frame)
_CHUNK = 16


def _workers(flow: Any, count: int | None, name: str) -> int:
    """The checked worker count ``name`` of a parallel map; None: one per CPU core."""
    if count is None:
        return os.cpu_count() or 1
    return check_int(type(flow).__name__, name, count, minimum=1, none_ok=True,  # type: ignore[return-value]
                     note="None: one per CPU core")  # (count is not None here; none_ok words the message)


def _set_map_options(flow: Any, map_func: Any, buffer_size: int, strict: bool) -> None:
    """Check and set the options both parallel maps take besides their worker count."""
    if map_func is None or not callable(map_func):
        raise TypeError(f"{type(flow).__name__} needs a callable map_func, got {map_func!r}")
    flow.map_func = map_func
    flow.buffer_size = check_int(type(flow).__name__, "buffer_size", buffer_size, minimum=1)
    flow.strict = bool(strict)


class MultiProcessMapData(WorkerProcesses, ProxyDataFlow):
    """``map_func`` applied to the datapoints of ``ds`` by ``num_proc`` worker processes
    (default: one per CPU core), with up to ``buffer_size`` datapoints in flight.

    ``map_func`` goes to the workers by cloudpickle (a lambda or closure works too); the
    datapoints and results travel as msgpack (lists, dicts, numbers, str, bytes, NumPy
    arrays). ``ds`` runs in this process. Workers start on ``reset_state`` (which also resets
    ``ds`` here) and stop on :meth:`close`, at collection or at exit; a worker's exception is
    raised here as :class:`InputWorkerError` with its traceback. See the module for
    ``strict``. With a seed from :func:`fix_rng_seed`, worker ``i`` uses ``seed + 1 + i``.
    """

    map_func: Callable[[Any], Any]  # these three: set by _set_map_options
    buffer_size: int
    strict: bool

    def __init__(self, ds: Any, num_proc: int | None = None, map_func: Callable[[Any], Any] | None = None,
                 *, buffer_size: int = 200, strict: bool = False, start_method: str = "spawn") -> None:
        ProxyDataFlow.__init__(self, ds)
        _set_map_options(self, map_func, buffer_size, strict)
        self.num_proc = _workers(self, num_proc, "num_proc")
        self._init_workers(start_method)
        self._source: Iterator[Any] | None = None

    @property
    def name(self) -> str:
        return f"{type(self).__name__}({self.num_proc} workers)"

    def reset_state(self) -> None:
        """Reset ``ds`` in this process and (re)start the workers."""
        payload = pickle_payload(self.map_func, "map_func", self.name)
        reset_dataflow(self.ds)
        seeds = worker_seeds(self.num_proc, shared=False)
        kwargs = [{"payload": payload, "index": i, "count": self.num_proc, "seed": seeds[i]}
                  for i in range(self.num_proc)]
        self._start(run_map_worker, kwargs, duplex=True)
        self._source = None

    def __iter__(self) -> Iterator[Any]:
        self._ensure_started()
        with self._reading():  # any failure stops every worker before it propagates
            if self.strict:
                self._drain()  # results of a pass abandoned midway do not belong to this one
                source = iter(self.ds)
            else:
                if self._source is None:
                    self._source = repeat_passes(self.ds, f"the dataflow of {self.name}",
                                                 max_empty_passes=MAX_EMPTY_PASSES)
                source = self._source
            yield from self._map(source)

    def _map(self, source: Iterator[Any]) -> Iterator[Any]:
        """Keep up to ``buffer_size`` datapoints in flight; send them in chunks.

        Each worker gets ``tasks`` frames of up to :data:`_CHUNK` datapoints and answers each
        with one ``results`` frame, so a message, a wake-up and a poll are paid per chunk, not
        per datapoint. A chunk holds what there is room for: at first small ones (so that work
        starts at once), then, once a busy worker has room for at least ``refill`` more (half its
        share of the buffer, at most a chunk), a chunk of what fits."""
        workers = self._workers
        per_worker = max(1, math.ceil(self.buffer_size / len(workers)))
        first_chunk = max(1, min(_CHUNK, per_worker // 4))
        refill = max(1, min(_CHUNK, per_worker // 2))  # the least room worth a frame to a busy worker
        exhausted = False
        while True:
            while not exhausted:
                w = min(workers, key=lambda w: w.in_flight)
                room = per_worker - w.in_flight
                if room <= 0 or (w.in_flight and room < refill):
                    break
                wanted = min(room, _CHUNK if w.in_flight else first_chunk)
                chunk = list(itertools.islice(source, wanted))
                if chunk:
                    self._send(w, chunk)
                exhausted = len(chunk) < wanted
            busy = [w for w in workers if w.in_flight]
            if not busy:
                return
            ready = set(wait([w.conn for w in busy] + [w.process.sentinel for w in workers]))
            for w in workers:
                if w.process.sentinel in ready:
                    raise worker_failure(self.name, w, self.num_proc, self._closing)
            for w in busy:
                if w.conn in ready:
                    yield from self._receive(w)

    def _send(self, w: Worker, datapoints: list[Any]) -> None:
        frame = encode_frame("tasks", datapoints=datapoints)
        try:
            send_frame(w.conn, frame, [])
        except OSError:
            raise worker_failure(self.name, w, self.num_proc, self._closing) from None
        w.in_flight += len(datapoints)

    def _receive(self, w: Worker) -> list[Any]:
        """The results (None left out) of worker ``w``'s next answered chunk."""
        frame = receive(self.name, w, self.num_proc, self._closing)
        if frame["kind"] != "results" or frame["count"] > w.in_flight:
            raise FrameError(f"{self.name}: worker {w.index} sent a {frame['kind']!r} frame "
                             f"{frame.get('count', '')}, expected 'results' of at most {w.in_flight}")
        w.in_flight -= frame["count"]
        return frame["datapoints"]  # type: ignore[no-any-return]  # a checked "results" frame

    def _drain(self) -> None:
        for w in self._workers:
            while w.in_flight:
                self._receive(w)


#: tensorpack's name of the same dataflow (there, on ZeroMQ)
MultiProcessMapDataZMQ = MultiProcessMapData


class MultiThreadMapData(ProxyDataFlow):
    """``map_func`` applied to the datapoints of ``ds`` by ``num_thread`` threads (default: one
    per CPU core), with up to ``buffer_size`` datapoints in flight; for ``map_func``\\ s that
    release the GIL (I/O, NumPy, image decoding). ``map_func`` and the datapoints stay in this
    process: nothing is pickled or encoded. See the module for ``strict``."""

    map_func: Callable[[Any], Any]  # these three: set by _set_map_options
    buffer_size: int
    strict: bool

    def __init__(self, ds: Any, num_thread: int | None = None, map_func: Callable[[Any], Any] | None = None,
                 *, buffer_size: int = 200, strict: bool = False) -> None:
        super().__init__(ds)
        _set_map_options(self, map_func, buffer_size, strict)
        self.num_thread = _workers(self, num_thread, "num_thread")
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        # in submission order (a dict as an ordered set): what is done is yielded in that order, so
        # that one thread gives the dataflow's own order, as tensorpack's does
        self._pending: dict[concurrent.futures.Future[Any], None] = {}
        self._source: Iterator[Any] | None = None

    def reset_state(self) -> None:
        super().reset_state()
        self.close()
        self._pool = concurrent.futures.ThreadPoolExecutor(self.num_thread, thread_name_prefix="map")
        self._source = None

    def close(self) -> None:
        """Stop the threads (after the datapoints they are mapping)."""
        if self._pool is not None:
            for future in self._pending:
                future.cancel()
            self._pool.shutdown(wait=True)
            self._pool, self._pending = None, {}

    def __iter__(self) -> Iterator[Any]:
        if self._pool is None:
            self.reset_state()
        if self.strict:
            concurrent.futures.wait(self._pending)
            self._pending = {}
            source = iter(self.ds)
        else:
            if self._source is None:
                self._source = repeat_passes(self.ds, "the dataflow of MultiThreadMapData",
                                             max_empty_passes=MAX_EMPTY_PASSES)
            source = self._source
        exhausted = False
        while True:
            while not exhausted and len(self._pending) < self.buffer_size:
                try:
                    datapoint = next(source)
                except StopIteration:
                    exhausted = True
                    break
                self._pending[self._pool.submit(self.map_func, copy(datapoint))] = None  # type: ignore[union-attr]
            if not self._pending:
                return
            done, _ = concurrent.futures.wait(self._pending, return_when=concurrent.futures.FIRST_COMPLETED)
            for future in [f for f in self._pending if f in done]:
                del self._pending[future]
                result = future.result()
                if result is not None:
                    yield result
