"""tensorpack 0.11's ``tensorpack.predict.concurrency``: ``MultiThreadAsyncPredictor``, a thread per predictor
that batches the queued single datapoints (up to ``batch_size``, without waiting for more) and resolves each
one's ``concurrent.futures.Future`` with its row of every output."""
from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any

import numpy as np

from trainstack.callbacks import logger

from .._replaced import stand_in_names, unprovided
from .base import PredictorBase

__all__ = ["MultiThreadAsyncPredictor"] + stand_in_names(__name__)


class _PredictorWorkerThread(threading.Thread):
    """Takes up to ``batch_size`` queued tasks, calls the predictor once on their stacked inputs, resolves them."""

    def __init__(self, tasks: queue.Queue, pred_func: Callable[..., Any], id: int, batch_size: int) -> None:
        super().__init__(name=f"PredictorWorkerThread-{id}", daemon=True)
        self.queue, self.func, self.batch_size, self.id = tasks, pred_func, batch_size, id
        self.stop_event = threading.Event()

    def run(self) -> None:
        while not self.stop_event.is_set():
            try:
                inp, f = self.queue.get(timeout=0.1)
            except queue.Empty:
                continue
            batched, futures = self.fetch_batch(inp, f)
            try:
                outputs = self.func(*batched)
            except Exception as e:  # the callers see the predictor's error
                for fut in futures:
                    fut.set_exception(e)
                continue
            for idx, fut in enumerate(futures):
                fut.set_result([k[idx] for k in outputs])

    def fetch_batch(self, inp: Sequence[Any], f: Future) -> tuple[list[np.ndarray], list[Future]]:
        """The first task and those queued behind it, up to ``batch_size``, without waiting."""
        batched: list[list[Any]] = [[x] for x in inp]
        futures = [f]
        while len(futures) < self.batch_size:
            try:
                inp, f = self.queue.get_nowait()
            except queue.Empty:
                break
            for k, x in enumerate(inp):
                batched[k].append(x)
            futures.append(f)
        return [np.asarray(b) for b in batched], futures


class MultiThreadAsyncPredictor(PredictorBase):
    """Runs ``predictors`` (callables on batches: ``OnlinePredictor``s) in a thread each, on single datapoints
    queued by :meth:`put_task`; ``start()`` starts the threads, :meth:`stop` ends them (also ``with``)."""

    def __init__(self, predictors: Sequence[Callable[..., Any]], batch_size: int = 5) -> None:
        """
        Args:
            predictors: the predictors to use, one thread each.
            batch_size: the largest batch a thread makes of the queued datapoints.
        """
        if not predictors:
            raise ValueError("MultiThreadAsyncPredictor needs at least one predictor")
        for k in predictors:
            if not callable(k):
                raise TypeError(f"MultiThreadAsyncPredictor: {k!r} is not a predictor")
            if getattr(k, "return_input", False):
                raise ValueError("MultiThreadAsyncPredictor does not take predictors with return_input=True, as "
                                 "tensorpack's")
        self.input_queue: queue.Queue = queue.Queue(maxsize=len(predictors) * 100)
        self.threads = [_PredictorWorkerThread(self.input_queue, f, id, batch_size)
                        for id, f in enumerate(predictors)]

    def start(self) -> None:
        """Start the threads."""
        for t in self.threads:
            t.start()

    def stop(self) -> None:
        """Stop the threads and wait for them; tasks still queued are cancelled."""
        for t in self.threads:
            t.stop_event.set()
        for t in self.threads:
            if t.is_alive():
                t.join()
        while True:
            try:
                _, f = self.input_queue.get_nowait()
            except queue.Empty:
                break
            f.cancel()
            logger.warn("MultiThreadAsyncPredictor.stop(): cancelled a task still queued.")

    def __enter__(self) -> MultiThreadAsyncPredictor:
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def put_task(self, dp: Sequence[Any], callback: Callable[[Future], Any] | None = None) -> Future:
        """Queue the datapoint ``dp`` (a list of inputs); ``callback(future)`` is called when it is done.

        Returns:
            the ``concurrent.futures.Future`` of its outputs.
        """
        f: Future = Future()
        if callback is not None:
            f.add_done_callback(callback)
        self.input_queue.put((dp, f))
        return f

    def _do_call(self, dp: tuple[Any, ...]) -> Any:
        """The outputs of one datapoint, waiting for them."""
        return self.put_task(dp).result()


__getattr__ = unprovided(__name__)
