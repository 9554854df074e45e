"""Multi-process input: worker processes run the dataflow, so that Python-heavy preprocessing
uses more than one core.

Workers send datapoints to the trainer as msgpack frames (:mod:`.codec`)
through pipes; nothing is unpickled from them. Pickle is used once, to start
the workers: the dataflow (or ``worker_factory``) and ``map_func`` must be
picklable (defined at module level, not lambdas or local classes), and with
the default ``spawn`` start method, which is the safe one once TensorFlow is
loaded, their modules must be importable in a fresh process. Workers import
no TensorFlow themselves (unless the dataflow's module or the main script
does), so they start in a fraction of a second.

Each datapoint arrives exactly once per pass: frames carry their pass
number, and pass ``p`` is delivered completely (every worker's
``end_of_pass``) before any datapoint of pass ``p + 1``; a worker that runs
ahead waits on its full pipe. Datapoints of one pass arrive in whatever order
the workers produce them.
"""
from __future__ import annotations

import dataclasses
import logging
import multiprocessing as mp
import os
import pickle
import runpy
import signal
import weakref
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import Any, Callable, Iterator

from ._worker_entry import RUN_NAME
from .codec import decode_frame
from .errors import FrameError, InputError, InputWorkerError
from .queue import QueueInput

__all__ = ["MultiProcessDataFlow", "MultiProcessInput"]

logger = logging.getLogger("trainstack.inputs")

_ENTRY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_worker_entry.py")


@dataclasses.dataclass
class _Worker:
    index: int
    process: BaseProcess
    conn: Connection
    pass_num: int = 0  # the pass its next frame belongs to


class MultiProcessDataFlow:
    """A dataflow whose datapoints are produced by ``num_workers`` worker processes.

    Give either ``dataflow``, which every worker runs, worker ``i`` keeping the
    datapoints ``k`` with ``k % num_workers == i`` (so put heavy per-datapoint
    work in ``map_func``, which a worker applies only to the datapoints it
    keeps), or ``worker_factory(i, num_workers)``, which returns worker ``i``'s
    own dataflow; a pass is then the union of the workers' passes. ``size``
    (datapoints per pass) defaults to ``len(dataflow)``.

    Workers start on :meth:`reset_state` (or the first iteration) and stop on
    :meth:`close`, when this object is collected, or at exit; they also exit
    when the trainer's process dies. A worker that fails or dies makes the
    iteration raise :class:`InputWorkerError` (its traceback, or its exit code)
    as soon as it happens. Iterate from one thread at a time.

    ``start_method`` is multiprocessing's. With ``"spawn"`` each worker
    re-imports the main script (to find what was defined there), so a script
    that imports TensorFlow at its top makes every worker import it too;
    ``"forkserver"`` pays that once. ``"fork"`` starts fastest but is unsafe
    once TensorFlow has started its threads.
    """

    def __init__(self, dataflow: Any = None, num_workers: int = 2, *,
                 worker_factory: Callable[[int, int], Any] | None = None,
                 map_func: Callable[[Any], Any] | None = None, size: int | None = None,
                 start_method: str = "spawn") -> None:
        if (dataflow is None) == (worker_factory is None):
            raise ValueError("MultiProcessDataFlow needs either a dataflow or a worker_factory(index, "
                             f"num_workers), not {'both' if dataflow is not None else 'neither'}")
        if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 1:
            raise ValueError(f"num_workers must be a positive int, got {num_workers!r}")
        for what, fn in (("worker_factory", worker_factory), ("map_func", map_func)):
            if fn is not None and not callable(fn):
                raise TypeError(f"{what} must be callable, got {fn!r}")
        if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size < 1):
            raise ValueError(f"size must be a positive int (datapoints per pass) or None, got {size!r}")
        if start_method not in mp.get_all_start_methods():
            raise ValueError(f"start_method {start_method!r} is not available here; "
                             f"expected one of {mp.get_all_start_methods()}")
        self.dataflow = dataflow
        self.num_workers = num_workers
        self.worker_factory = worker_factory
        self.map_func = map_func
        self.size = size
        self.start_method = start_method
        self._workers: list[_Worker] = []
        self._running = False
        self._closing = False
        self._next_pass = 0
        self._finalizer: weakref.finalize | None = None

    @property
    def name(self) -> str:
        return f"MultiProcessDataFlow({self.num_workers} workers)"

    @property
    def workers(self) -> tuple[BaseProcess, ...]:
        """The worker processes of the latest start (alive or not)."""
        return tuple(w.process for w in self._workers)

    def __len__(self) -> int:
        if self.size is not None:
            return self.size
        if self.dataflow is None:
            raise TypeError(f"{self.name} with a worker_factory does not know its size: pass size=")
        return len(self.dataflow)

    # -- workers ---------------------------------------------------------------------
    def reset_state(self) -> None:
        """(Re)start the workers; the next iteration is their first pass."""
        self.close()
        payload = self._payload()
        ctx = mp.get_context(self.start_method)
        workers: list[_Worker] = []
        try:
            for i in range(self.num_workers):
                receiver, sender = ctx.Pipe(duplex=False)
                args = {"conn": sender, "payload": payload, "index": i, "count": self.num_workers}
                process = ctx.Process(target=runpy.run_path, args=(_ENTRY,),
                                      kwargs={"init_globals": {"WORKER_ARGS": args}, "run_name": RUN_NAME},
                                      name=f"trainstack-input-worker-{i}", daemon=True)
                process.start()
                sender.close()  # only the worker writes; its exit then reads as EOF here
                workers.append(_Worker(i, process, receiver))
        except BaseException:
            _stop_workers(workers)
            raise
        logger.info("%s: started worker processes %s", self.name, [w.process.pid for w in workers])
        self._workers, self._next_pass = workers, 0
        self._running, self._closing = True, False
        self._finalizer = weakref.finalize(self, _stop_workers, workers)

    def close(self) -> None:
        """Stop the workers (terminate, join, close the pipes). Safe to call twice."""
        self._closing = True
        self._running = False
        if self._finalizer is not None:
            self._finalizer()

    def __enter__(self) -> MultiProcessDataFlow:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _payload(self) -> bytes:
        try:
            return pickle.dumps((self.dataflow, self.worker_factory, self.map_func))
        except Exception as e:  # noqa: BLE001 - pickle raises several kinds
            raise InputError(
                f"{self.name}: the dataflow, worker_factory and map_func must be picklable to start "
                f"worker processes (define them at module level, not as lambdas or local classes); "
                f"pickling failed with {type(e).__name__}: {e}") from e

    # -- one pass ----------------------------------------------------------------------
    def __iter__(self) -> Iterator[Any]:
        """The datapoints of the next pass, from all workers."""
        if not self._running:
            self.reset_state()
        pass_num, self._next_pass = self._next_pass, self._next_pass + 1
        workers = self._workers
        try:
            while True:
                pending = [w for w in workers if w.pass_num <= pass_num]
                if not pending:
                    return
                ready = set(wait([w.conn for w in pending] + [w.process.sentinel for w in workers]))
                for w in workers:
                    if w.process.sentinel in ready:
                        raise self._failure(w)
                for w in pending:
                    if w.conn not in ready:
                        continue
                    frame = self._receive(w)
                    if frame["kind"] == "end_of_pass":
                        w.pass_num += 1
                    elif frame["pass_num"] == pass_num:
                        yield frame["datapoint"]
                    # else: a datapoint of an earlier pass whose iteration was abandoned midway
        except (OSError, ValueError, EOFError) as e:
            if self._closing:
                raise InputError(f"{self.name} was closed while it was being read") from e
            raise

    def _receive(self, w: _Worker) -> dict[str, Any]:
        try:
            data = w.conn.recv_bytes()
        except EOFError:
            raise self._failure(w) from None
        frame = decode_frame(data, peer=f"{self.name} worker {w.index}")
        if frame["kind"] == "error":
            raise InputWorkerError(f"{self.name}: {frame['message']}")
        if frame["kind"] not in ("data", "end_of_pass") or frame["pass_num"] != w.pass_num:
            raise FrameError(f"{self.name}: worker {w.index} sent a {frame['kind']!r} frame "
                             f"{frame.get('pass_num', '')} while on pass {w.pass_num}")
        return frame

    def _failure(self, w: _Worker) -> InputWorkerError:
        """The error for worker ``w``, which died: its own error frame if it sent one."""
        if self._closing:
            return InputWorkerError(f"{self.name} was closed while it was being read")
        w.process.join(1.0)
        try:
            while w.conn.poll(0):
                frame = decode_frame(w.conn.recv_bytes(), peer=f"{self.name} worker {w.index}")
                if frame["kind"] == "error":
                    return InputWorkerError(f"{self.name}: {frame['message']}")
        except (EOFError, OSError, FrameError):
            pass
        code = w.process.exitcode
        how = f"exit code {code}"
        if code is not None and code < 0 and -code in signal.valid_signals():
            how += f" (killed by {signal.Signals(-code).name})"
        return InputWorkerError(
            f"{self.name}: worker {w.index} of {self.num_workers} (pid {w.process.pid}) died with {how} "
            f"during pass {w.pass_num}; a pass needs every worker. If it died at start-up, its stderr "
            "says why (e.g. the dataflow's module cannot be imported in a fresh process)")


def _stop_workers(workers: list[_Worker], timeout: float = 5.0) -> None:
    """Terminate and join ``workers`` (killing those that do not stop); close their pipes."""
    for w in workers:
        if w.process.is_alive():
            w.process.terminate()
    for w in workers:
        w.process.join(timeout)
        if w.process.is_alive():
            logger.warning("input worker %s (pid %s) ignored SIGTERM; killing it", w.index, w.process.pid)
            w.process.kill()
            w.process.join(timeout)
    for w in workers:
        w.conn.close()


class MultiProcessInput(QueueInput):
    """A :class:`QueueInput` over a :class:`MultiProcessDataFlow`: ``num_workers`` processes
    prepare datapoints, a thread enqueues them, the traced step dequeues.

    Arguments are :class:`MultiProcessDataFlow`'s, and ``queue_size`` is
    :class:`QueueInput`'s. The workers start before training and stop after it,
    whether it ends or fails; a worker's failure stops training and is raised
    from ``after_train``, as QueueInput raises its thread's errors.
    """

    def __init__(self, dataflow: Any = None, num_workers: int = 2, *,
                 worker_factory: Callable[[int, int], Any] | None = None,
                 map_func: Callable[[Any], Any] | None = None, size: int | None = None,
                 queue_size: int = 50, start_method: str = "spawn") -> None:
        super().__init__(MultiProcessDataFlow(dataflow, num_workers, worker_factory=worker_factory,
                                              map_func=map_func, size=size, start_method=start_method),
                         queue_size)

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the workers, then the thread (which stopping the workers wakes)."""
        self._stop.set()  # from now on the thread's errors are not errors of training
        self.dataflow.close()
        super().stop(timeout)
        self.dataflow.close()  # in case the thread was still starting up: it made new workers
