"""tensorpack 0.11's ``tensorpack.utils.concurrency``: stoppable threads, a thread sharing the default session,
and process helpers."""
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

__all__ = ["StoppableThread", "ShareSessionThread", "LoopThread", "ensure_proc_terminate", "start_proc_mask_signal"]


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


class ShareSessionThread(threading.Thread):
    """A thread (``th``'s ``run``, or a subclass's) that runs in the TF1 default session of the thread that
    started it, as tensorpack's: a script's callback runs in the TF1 room's session of its graph, and a thread
    it starts shares it. Started where there is no default session (TensorFlow 2's eager code needs none), it
    runs without one, where tensorpack's failed on ``None.as_default()``."""

    def __init__(self, th: threading.Thread | None = None) -> None:
        super().__init__()
        self._th = None
        self._sess: Any = None
        if th is not None:
            if not isinstance(th, threading.Thread):
                raise TypeError(f"ShareSessionThread(th=...) must be a threading.Thread, got {th!r}")
            self._th = th
            self.name = th.name
            self.daemon = th.daemon

    @contextmanager
    def default_sess(self) -> Iterator[Any]:
        """The shared session as the default one (None, with a warning, when there was none at ``start()``)."""
        if self._sess is not None:
            with self._sess.as_default():
                yield self._sess
        else:
            log_once(f"ShareSessionThread {self.name} wasn't under a default session!", "warn")
            yield None

    def start(self) -> None:
        import tensorflow as tf  # noqa: PLC0415 - only a started thread needs TensorFlow

        self._sess = tf.compat.v1.get_default_session()
        super().start()

    def run(self) -> None:
        if self._th is None:
            raise NotImplementedError("ShareSessionThread without th=: override run()")
        if self._sess is None:
            self._th.run()
            return
        with self._sess.as_default():
            self._th.run()


__all__ += stand_in_names(__name__)

__getattr__ = unprovided(__name__)
