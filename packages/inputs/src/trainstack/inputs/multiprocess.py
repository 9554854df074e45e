"""Multi-process input: a :class:`QueueInput` over a
:class:`~trainstack.dataflow.MultiProcessDataFlow`, whose worker processes run
the dataflow so that Python-heavy preprocessing uses more than one core.

``MultiProcessDataFlow`` lives in ``trainstack.dataflow`` (it imports no
TensorFlow, so neither do its workers); it is re-exported here.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from trainstack.dataflow.parallel import MultiProcessDataFlow

from .queue import QueueInput

__all__ = ["MultiProcessDataFlow", "MultiProcessInput"]


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

    def _skip(self, n: int) -> bool:
        return False  # the workers' interleaving decides the order: there is no position to go back to
