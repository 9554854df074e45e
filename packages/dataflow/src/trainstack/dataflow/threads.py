"""tensorpack's :class:`MultiThreadRunner` (alias ``MultiThreadPrefetchData``): several
threads, each running its own dataflow pass after pass, filling one bounded queue.

The threads start in ``reset_state`` (or the first pass) and stop when the consumer stops:
when a pass is abandoned midway (the loop over it breaks or raises, or its iterator is
closed or collected), on :meth:`close`, at the end of a ``with`` block, and when the runner
is collected. A stopped runner restarts its threads at the next pass. An exception in a
thread stops the others and is raised to the consumer.
"""
from __future__ import annotations

import itertools
import logging
import queue
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from typing import Any

from trainstack.loop.checks import check_int

from .base import DataFlow, SizeUnknownError, len_of
from .protocol import EmptyPasses, reset_dataflow

__all__ = ["MultiThreadRunner", "MultiThreadPrefetchData"]

logger = logging.getLogger("trainstack.dataflow")

_POLL_S = 0.05  # how often a thread blocked on a full queue checks whether it should stop


class _Failure:
    """An exception raised in a thread, on its way to the consumer."""

    def __init__(self, exc: BaseException, index: int) -> None:
        self.exc, self.index = exc, index


def _run(ds: Any, q: queue.Queue[Any], stop: threading.Event, index: int) -> None:
    def put(item: Any) -> bool:
        while not stop.is_set():
            try:
                q.put(item, timeout=_POLL_S)
                return True
            except queue.Full:
                continue
        return False

    empty_passes = EmptyPasses(f"thread {index}'s dataflow", ds)
    try:
        while not stop.is_set():
            empty = True
            for dp in ds:
                empty = False
                if not put(dp):
                    return
            empty_passes.end_pass(empty)
    except BaseException as e:  # noqa: BLE001 - handed to the consumer
        put(_Failure(e, index))


def _stop(stop: threading.Event, threads: list[threading.Thread]) -> None:
    """Stop the threads and join them; one blocked inside its dataflow is waited for 5 s."""
    stop.set()
    deadline = time.monotonic() + 5.0
    for th in threads:
        th.join(timeout=max(0.0, deadline - time.monotonic()))
        if th.is_alive():
            logger.warning("MultiThreadRunner: thread %s is blocked inside its dataflow and did not stop "
                           "within 5 s; it is a daemon thread, left behind", th.name)


class MultiThreadRunner(DataFlow):
    """``num_thread`` threads, each running the dataflow ``get_df()`` (called once per thread:
    return a new dataflow each time unless it is stateless) pass after pass, independently;
    a queue of ``num_prefetch`` datapoints collects their output. A pass is ``len`` datapoints
    (the size of the first thread's dataflow; endless when it has none) in the order the
    threads produce them: with one thread, the dataflow's own order; with several, the same
    distribution if datapoints are i.i.d. (duplicates and reordering, as in tensorpack).
    For threads, not processes: for dataflows that release the GIL (I/O, decoding, NumPy).
    """

    def __init__(self, get_df: Callable[[], Any], num_prefetch: int, num_thread: int) -> None:
        if not callable(get_df):
            raise TypeError(f"MultiThreadRunner needs get_df, a callable returning a dataflow, got {get_df!r}")
        self.num_thread = check_int("MultiThreadRunner", "num_thread", num_thread, minimum=1)
        self.num_prefetch = check_int("MultiThreadRunner", "num_prefetch", num_prefetch, minimum=1)
        self.dataflows = [get_df() for _ in range(self.num_thread)]
        for ds in self.dataflows:
            if not hasattr(ds, "__iter__"):
                raise TypeError(f"MultiThreadRunner: get_df() must return a dataflow, got {type(ds).__name__}")
        self.queue: queue.Queue[Any] = queue.Queue(maxsize=self.num_prefetch)
        self._threads: list[threading.Thread] = []
        self._stop_event = threading.Event()
        self._finalizer: weakref.finalize[..., Any] | None = None
        self._reset_done = False

    def __len__(self) -> int:
        return len_of(self.dataflows[0])

    def reset_state(self) -> None:
        """Reset every thread's dataflow and (re)start the threads."""
        self.close()
        for ds in self.dataflows:
            reset_dataflow(ds)
        self._reset_done = True
        self._start()

    def _start(self) -> None:
        self.queue = queue.Queue(maxsize=self.num_prefetch)
        self._stop_event = threading.Event()
        self._threads = [threading.Thread(target=_run, args=(ds, self.queue, self._stop_event, i),
                                          name=f"MultiThreadRunner-{i}", daemon=True)
                         for i, ds in enumerate(self.dataflows)]
        for th in self._threads:
            th.start()
        self._finalizer = weakref.finalize(self, _stop, self._stop_event, self._threads)

    def close(self) -> None:
        """Stop and join the threads (the next pass starts them again)."""
        if self._finalizer is not None:
            self._finalizer()
            self._finalizer = None
        self._threads = []

    def __enter__(self) -> MultiThreadRunner:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __getstate__(self) -> dict[str, Any]:
        """Pickled with its dataflows only, not its threads, queue or finalizer: in the process
        that unpickles it (a worker process), ``reset_state`` or the first pass starts new threads."""
        state = self.__dict__.copy()
        state.update(queue=None, _threads=[], _stop_event=None, _finalizer=None, _reset_done=False)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.queue = queue.Queue(maxsize=self.num_prefetch)
        self._stop_event = threading.Event()

    def __iter__(self) -> Iterator[Any]:
        if not self._reset_done:
            self.reset_state()
        elif not self._threads:
            self._start()
        try:
            size: int | None = len(self)
        except (SizeUnknownError, NotImplementedError, TypeError):
            size = None
        finished = False
        try:
            for _ in (itertools.count() if size is None else range(size)):
                item = self.queue.get()
                if isinstance(item, _Failure):
                    raise RuntimeError(f"MultiThreadRunner: thread {item.index}'s dataflow failed: "
                                       f"{type(item.exc).__name__}: {item.exc}") from item.exc
                yield item
            finished = True
        finally:
            if not finished:  # abandoned or failed: the consumer stopped
                self.close()


#: tensorpack's older name
MultiThreadPrefetchData = MultiThreadRunner
