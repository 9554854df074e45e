"""tensorpack 0.11's ``tensorpack.utils.concurrency``: stoppable threads and process helpers."""
from __future__ import annotations

import atexit
import multiprocessing as mp
import queue
import signal
import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from .._replaced import stand_in_names, unprovided
from .argtools import log_once

__all__ = ["StoppableThread", "LoopThread", "ensure_proc_terminate", "start_proc_mask_signal"]


class StoppableThread(threading.Thread):
    """A thread with a 'stop' event (``evt``, or a new ``threading.Event``)."""

    def __init__(self, evt: threading.Event | None = None) -> None:
        super().__init__()
        self._stop_evt = threading.Event() if evt is None else evt

    def stop(self) -> None:
        """Set the stop event."""
        self._stop_evt.set()

    def stopped(self) -> bool:
        """Whether the stop event is set."""
        return self._stop_evt.is_set()

    def queue_put_stoppable(self, q: Any, obj: Any) -> None:
        """Put ``obj`` into ``q``, giving up once the thread is stopped."""
        while not self.stopped():
            try:
                q.put(obj, timeout=5)
                break
            except queue.Full:
                pass

    def queue_get_stoppable(self, q: Any) -> Any:
        """Take an object from ``q``, giving up (None) once the thread is stopped."""
        while not self.stopped():
            try:
                return q.get(timeout=5)
            except queue.Empty:
                pass
        return None


class LoopThread(StoppableThread):
    """A daemon thread calling ``func`` in a loop until stopped; pausable unless ``pausable=False``."""

    def __init__(self, func: Callable[[], Any], pausable: bool = True) -> None:
        super().__init__()
        self._func = func
        self._pausable = pausable
        if pausable:
            self._lock = threading.Lock()
        self.daemon = True

    def run(self) -> None:
        while not self.stopped():
            if self._pausable:
                self._lock.acquire()
                self._lock.release()
            self._func()

    def pause(self) -> None:
        """Pause the loop (after the current call)."""
        if not self._pausable:
            raise AssertionError("LoopThread(pausable=False) cannot pause")
        self._lock.acquire()

    def resume(self) -> None:
        """Resume the loop."""
        if not self._pausable:
            raise AssertionError("LoopThread(pausable=False) cannot resume")
        self._lock.release()


def ensure_proc_terminate(proc: mp.Process | list[mp.Process]) -> None:
    """Terminate the process(es) when the main process exits, if still alive."""
    if isinstance(proc, list):
        for p in proc:
            ensure_proc_terminate(p)
        return

    def stop_proc_by_weak_ref(ref: weakref.ref[mp.Process]) -> None:
        p = ref()
        if p is None or not p.is_alive():
            return
        p.terminate()
        p.join()

    if not isinstance(proc, mp.Process):
        raise AssertionError(f"ensure_proc_terminate() takes multiprocessing.Process objects, got {proc!r}")
    atexit.register(stop_proc_by_weak_ref, weakref.ref(proc))


@contextmanager
def _mask_sigint() -> Iterator[bool]:
    """In the main thread, a block where SIGINT is ignored (yields True); elsewhere yields False."""
    if threading.current_thread() is threading.main_thread():
        handler = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            yield True
        finally:
            signal.signal(signal.SIGINT, handler)
    else:
        yield False


def start_proc_mask_signal(proc: Any) -> None:
    """Start the process(es) with SIGINT ignored (applied only when called from the main thread),
    so that Ctrl-C reaches the main process only."""
    procs = proc if isinstance(proc, list) else [proc]
    with _mask_sigint():
        for p in procs:
            if isinstance(p, mp.Process) and mp.get_start_method() == "fork":
                log_once("Starting a process with 'fork' method is efficient but not safe and may cause deadlock "
                         "or crash. Use 'forkserver' or 'spawn' method instead if you run into such issues.", "warn")
            p.start()


__all__ += stand_in_names(__name__)

__getattr__ = unprovided(__name__)
