"""Starting, watching and stopping the worker processes of the multi-process dataflows.

What the workers run goes to them by value. The dataflow, ``worker_factory``
and ``map_func`` are pickled with cloudpickle (:func:`pickle_payload`), which
sends lambdas, closures and whatever is defined in ``__main__`` (the training
script, a notebook, ``python -c``) by value, and everything from an importable
module by reference, as pickle does. So no worker ever needs the main script:
:func:`start_workers` starts them without it: while it starts them, and only then,
multiprocessing's spawn preparation data leaves out the main module for the processes
this thread starts (see :func:`_main_left_out`).
Otherwise, with the ``spawn`` start method, every worker would re-run the
script as ``__mp_main__``, and a training script imports TensorFlow at its
top: seconds per worker, half a gigabyte each. A worker imports just
``trainstack.dataflow`` (no TensorFlow), cloudpickle, and the modules of the
user's objects.
"""
from __future__ import annotations

import contextlib
import dataclasses
import logging
import multiprocessing as mp
import multiprocessing.spawn as mp_spawn
import os
import secrets
import signal
import socket
import stat
import sys
import threading
import weakref
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import TYPE_CHECKING, Any

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]

from . import _payload_pickler
from ._readers import FrameReaders
from .base import fixed_rng_seed
from .errors import FrameError, InputError, InputWorkerError
from .frame_io import recv_frame

if TYPE_CHECKING:
    from typing import Self

logger = logging.getLogger("trainstack.dataflow")

_spawning = threading.local()
_start_lock = threading.Lock()  # one thread starts workers at a time (see _main_left_out)
_pipe_lock = threading.Lock()  # guards _pipe_bytes


@dataclasses.dataclass
class Worker:
    index: int
    process: BaseProcess | ExitedProcess  # ExitedProcess once stopped
    conn: Connection
    pass_num: int = 0  # the pass its next frame belongs to (stream workers)
    in_flight: int = 0  # tasks sent and not yet answered (map workers)
    pipe_bytes: int = 0  # what its pipe took of the budget of enlarged pipes


def pickle_payload(obj: Any, what: str, who: str) -> bytes:
    """``obj`` pickled by cloudpickle for the workers: lambdas, closures and definitions of
    ``__main__`` by value, objects of importable modules by reference, a ``ZipFile`` read from a
    path as that path (the worker reopens it; see :mod:`._payload_pickler`)."""
    try:
        return _payload_pickler.dumps(obj)
    except Exception as e:  # noqa: BLE001 - pickle raises several kinds
        raise InputError(
            f"{who}: {what} must be picklable to start worker processes (lambdas, closures and "
            "classes of the script are; locks, open files, sockets, generators and objects holding "
            f"them are not); pickling failed with {type(e).__name__}: {e}") from e


@contextlib.contextmanager
def _main_left_out() -> Iterator[None]:
    """Inside this block, processes that this thread spawns do not re-run the main script.

    multiprocessing's ``spawn.get_preparation_data`` is replaced by a wrapper for the block
    only, and restored when it ends; the wrapper drops the main-module entries only for the
    thread inside the block (other threads spawning meanwhile get the usual data). One thread
    at a time enters (``_start_lock``), so that the replacement and the restoration pair up."""
    with _start_lock:
        original = mp_spawn.get_preparation_data

        def get_preparation_data(name: str) -> dict[str, Any]:
            data = original(name)
            if getattr(_spawning, "without_main", False):
                data.pop("init_main_from_path", None)
                data.pop("init_main_from_name", None)
            return data

        mp_spawn.get_preparation_data = get_preparation_data
        _spawning.without_main = True
        try:
            yield
        finally:
            _spawning.without_main = False
            if mp_spawn.get_preparation_data is get_preparation_data:
                mp_spawn.get_preparation_data = original
            else:  # someone replaced it meanwhile: leave theirs, which may wrap ours
                logger.warning("multiprocessing.spawn.get_preparation_data was replaced while trainstack "
                               "started worker processes; leaving the replacement in place")


def start_workers(who: str, start_method: str, target: Callable[..., None], worker_kwargs: list[dict[str, Any]],
                  *, duplex: bool = False) -> list[Worker]:
    """Start one process per ``worker_kwargs`` running ``target(conn=..., **kwargs)``, without
    re-running the main script (what they run comes by value, see :func:`pickle_payload`)."""
    ctx = mp.get_context(start_method)
    workers: list[Worker] = []
    try:
        for i, kwargs in enumerate(worker_kwargs):
            if duplex:
                mine, theirs = ctx.Pipe(duplex=True)
            else:
                mine, theirs = ctx.Pipe(duplex=False)  # (reader, writer): only the worker writes
            pipe_bytes = _enlarge_buffers(mine, theirs)
            process = ctx.Process(target=target, kwargs={"conn": theirs, **kwargs},  # type: ignore[attr-defined]
                                  name=f"trainstack-dataflow-worker-{i}", daemon=True)
            try:
                with _main_left_out():
                    process.start()
            except BaseException:
                _release_pipe(pipe_bytes)
                mine.close()
                theirs.close()
                raise
            theirs.close()  # the worker's exit then reads as EOF here
            workers.append(Worker(i, process, mine, pipe_bytes=pipe_bytes))
    except BaseException:
        stop_workers(workers)
        raise
    logger.debug("%s: started worker processes %s", who, [w.process.pid for w in workers])
    return workers


#: The kernel buffer asked for each worker's connection: a large datapoint then crosses it in a
#: few system calls and wake-ups instead of one per 64 KiB (Linux's default pipe size); 1 MiB
#: measured 1.4x 256 KiB on 4 MB datapoints. Linux counts a user's pipe pages
#: (fs.pipe-user-pages-soft, 64 MiB by default) and past that limit gives every new pipe of the
#: user the smallest size, so this process enlarges pipes only up to :data:`_PIPE_BUDGET_BYTES`
#: in all (the workers' pipes that are open); beyond, new workers keep the default.
_CONN_BUFFER_BYTES = 1 << 20
_PIPE_BUDGET_BYTES = 16 << 20
_F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031) if fcntl is not None else None
_pipe_bytes = 0  # what the open enlarged pipes of this process hold (under _pipe_lock)


def _enlarge_buffers(mine: Connection, theirs: Connection) -> int:
    """Ask for :data:`_CONN_BUFFER_BYTES` of kernel buffer on a worker's pipe or socket pair;
    where the system refuses (limits, another OS), the default stays. Returns the pipe bytes
    taken from the budget (to give back with :func:`_release_pipe`)."""
    global _pipe_bytes
    for conn in (mine, theirs):
        fd = conn.fileno()
        try:
            mode = os.fstat(fd).st_mode
            if stat.S_ISFIFO(mode):
                if _F_SETPIPE_SZ is None or not sys.platform.startswith("linux"):
                    return 0
                with _pipe_lock:
                    if _pipe_bytes + _CONN_BUFFER_BYTES > _PIPE_BUDGET_BYTES:
                        return 0
                    size = fcntl.fcntl(fd, _F_SETPIPE_SZ, _CONN_BUFFER_BYTES)
                    _pipe_bytes += size
                    return size  # one pipe, one buffer
            if stat.S_ISSOCK(mode):
                sock = socket.socket(fileno=os.dup(fd))
                try:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, _CONN_BUFFER_BYTES)
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, _CONN_BUFFER_BYTES)
                finally:
                    sock.close()
        except OSError:
            return 0
    return 0


def _release_pipe(size: int) -> None:
    global _pipe_bytes
    with _pipe_lock:
        _pipe_bytes = max(0, _pipe_bytes - size)


@dataclasses.dataclass(frozen=True)
class ExitedProcess:
    """What a stopped worker keeps of its process once it was joined: its pid, name and exit
    code. The :class:`multiprocessing.Process` handle is dropped, so that its sentinel
    descriptor is released with it."""

    pid: int | None
    name: str
    exitcode: int | None

    def is_alive(self) -> bool:
        return False

    def join(self, timeout: float | None = None) -> None:
        """Nothing to wait for: it was joined when it was stopped."""

    @property
    def sentinel(self) -> int:
        raise ValueError(f"worker process {self.pid} was stopped and closed")


def stop_workers(workers: list[Worker], timeout: float = 5.0, readers: FrameReaders | None = None) -> None:
    """Terminate and join ``workers`` (killing those that do not stop); stop their ``readers``;
    close their pipes and drop their process handles, so that no process, thread or descriptor
    of theirs is left.

    Each ``Worker.process`` becomes an :class:`ExitedProcess`. Safe to call twice."""
    live = [w for w in workers if isinstance(w.process, BaseProcess)]
    for w in live:
        if w.process.is_alive():
            w.process.terminate()  # type: ignore[union-attr]  # live: BaseProcess only
    for w in live:
        w.process.join(timeout)
        if w.process.is_alive():
            logger.warning("dataflow worker %s (pid %s) ignored SIGTERM; killing it", w.index, w.process.pid)
            w.process.kill()  # type: ignore[union-attr]
            w.process.join(timeout)
    if readers is not None:  # before the pipes close: a reader must not read a reused descriptor
        readers.stop(timeout)
    for w in workers:
        w.conn.close()
        _release_pipe(w.pipe_bytes)
        w.pipe_bytes = 0
    for w in live:
        process = w.process
        if process.is_alive():  # not even SIGKILL stopped it within the timeout: keep its handle
            logger.error("dataflow worker %s (pid %s) is still running after SIGKILL", w.index, process.pid)
            continue
        # Drop our handle rather than close() it: multiprocessing closes its sentinel descriptor
        # when the handle is collected (at once, unless the caller kept it from ``workers``, in
        # which case it still answers exitcode and is_alive()).
        w.process = ExitedProcess(process.pid, process.name, process.exitcode)


def receive(who: str, w: Worker, count: int, closing: bool) -> dict[str, Any]:
    """The next frame of worker ``w``; its error frame or its death raises InputWorkerError."""
    try:
        frame = recv_frame(w.conn, peer=f"{who} worker {w.index}")
    except EOFError:
        raise worker_failure(who, w, count, closing) from None
    return checked_frame(who, frame)


def checked_frame(who: str, frame: dict[str, Any]) -> dict[str, Any]:
    """``frame``, unless it is a worker's error frame: that raises InputWorkerError."""
    if frame["kind"] == "error":
        raise InputWorkerError(f"{who}: {frame['message']}")
    return frame


def worker_failure(who: str, w: Worker, count: int, closing: bool, during: str = "") -> InputWorkerError:
    """The error for worker ``w``, which died: its own error frame if it sent one."""
    if closing:
        return InputWorkerError(f"{who} was closed while it was being read")
    w.process.join(1.0)
    try:
        while w.conn.poll(0):
            frame = recv_frame(w.conn, peer=f"{who} worker {w.index}")
            if frame["kind"] == "error":
                return InputWorkerError(f"{who}: {frame['message']}")
    except (EOFError, OSError, FrameError):
        pass
    code = w.process.exitcode
    how = f"exit code {code}"
    if code is not None and code < 0 and -code in signal.valid_signals():
        how += f" (killed by {signal.Signals(-code).name})"
    return InputWorkerError(
        f"{who}: worker {w.index} of {count} (pid {w.process.pid}) died with {how}{during}; the dataflow "
        "needs every worker. If it died at start-up, its stderr says why (e.g. the dataflow's "
        "module cannot be imported in a fresh process)")


def worker_seeds(count: int, shared: bool) -> list[int | None]:
    """The seed each of ``count`` workers gives :func:`fix_rng_seed` (None: its own seed).

    ``shared``: one seed for all (workers that must iterate a dataflow in the same order, such
    as the shards of one pass): the seed of :func:`fix_rng_seed`, or a fresh random one.
    Otherwise distinct seeds derived from the fixed seed, or None when there is none.
    """
    fixed = fixed_rng_seed()
    if shared:
        seed = fixed if fixed is not None else secrets.randbits(32)
        return [seed] * count
    return [None if fixed is None else (fixed + 1 + i) % 2**32 for i in range(count)]


class WorkerProcesses:
    """Base of the dataflows that run worker processes: start, stop, close, context manager.

    Workers start on :meth:`reset_state` (or the first iteration) and stop on :meth:`close`,
    when the object is collected, or at exit; they also exit when the trainer's process dies.
    An iteration that fails (a worker dies or sends an error, a malformed frame, an error or an
    interrupt while reading) stops *every* worker, joins them and closes their pipes before
    the error leaves it; this object then refuses to iterate until :meth:`reset_state` starts
    new workers, so that a failed stream never silently restarts from its beginning.
    """

    if TYPE_CHECKING:  # each subclass has its own
        @property
        def name(self) -> str: ...

    def _init_workers(self, start_method: str) -> None:
        if start_method not in mp.get_all_start_methods():
            raise ValueError(f"start_method {start_method!r} is not available here; "
                             f"expected one of {mp.get_all_start_methods()}")
        self.start_method = start_method
        self._workers: list[Worker] = []
        self._running = False
        self._closing = False
        self._failed: str | None = None  # why the workers were stopped by a failed iteration
        self._finalizer: weakref.finalize[..., Any] | None = None
        self._readers: FrameReaders | None = None

    @property
    def workers(self) -> tuple[BaseProcess | ExitedProcess, ...]:
        """The worker processes of the latest start (alive, or :class:`ExitedProcess` once stopped)."""
        return tuple(w.process for w in self._workers)

    def _start(self, target: Callable[..., None], worker_kwargs: list[dict[str, Any]], duplex: bool = False,
               read_ahead: int | None = None, gated: bool = False) -> None:
        """Start the workers; with ``read_ahead``, also a :class:`FrameReaders` thread per worker
        reading up to ``read_ahead`` frames ahead of the iteration (``self._readers``), pass by
        pass if ``gated``."""
        self.close()
        workers = start_workers(self.name, self.start_method, target, worker_kwargs, duplex=duplex)
        readers = None
        if read_ahead is not None:
            try:
                readers = FrameReaders(self.name, workers, read_ahead, gated=gated)
            except BaseException:
                stop_workers(workers)
                raise
        self._workers, self._readers = workers, readers
        self._running, self._closing, self._failed = True, False, None
        self._finalizer = weakref.finalize(self, stop_workers, workers, readers=readers)

    def _next_frame(self) -> tuple[Worker, dict[str, Any]]:
        """The next frame any worker sent, from the reader threads; a worker's error frame or
        death, a malformed frame or a closed dataflow raises."""
        readers = self._readers
        assert readers is not None  # started with read_ahead
        w, frame = readers.get()
        if w is None:  # the readers were stopped: the dataflow was closed
            raise frame
        if isinstance(frame, EOFError):  # the worker exited or died
            raise worker_failure(self.name, w, len(self._workers), self._closing, self._during(w))
        if isinstance(frame, BaseException):  # a malformed frame, a failed read
            raise frame
        return w, checked_frame(self.name, frame)

    def _during(self, w: Worker) -> str:
        """What worker ``w`` was doing, for the error saying it died (e.g. ``" during pass 2"``)."""
        return ""

    def _ensure_started(self) -> None:
        """Start the workers unless they run; refuse when a failure stopped them."""
        if self._failed is not None:
            raise InputError(f"{self.name}: its workers were stopped because an iteration failed "
                             f"({self._failed}); call reset_state() to start new workers")
        if not self._running:
            self.reset_state()  # type: ignore[attr-defined]

    @contextlib.contextmanager
    def _reading(self) -> Iterator[None]:
        """Wrap an iteration's reading: any error stops all the workers before it propagates.

        An iteration abandoned by its caller (GeneratorExit) leaves the workers running: the
        next iteration goes on. An error while :meth:`close` (from another thread) tears the
        pipes down reads as "closed while it was being read"."""
        try:
            yield
        except GeneratorExit:
            raise
        except BaseException as e:
            if self._closing:  # closed by the caller (MultiProcessInput.stop, close())
                self.close()
                if isinstance(e, (OSError, ValueError, EOFError)):
                    raise InputError(f"{self.name} was closed while it was being read") from e
                raise
            self._failed = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            self.close()
            raise

    def close(self) -> None:
        """Stop the workers (terminate, join, close the pipes, drop the process handles). Safe to call
        twice, and from another thread than the one iterating."""
        self._closing = True
        self._running = False
        if self._finalizer is not None:
            self._finalizer()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
