"""Dataflows whose datapoints are produced by worker processes, so that Python-heavy
preprocessing uses more than one core.

- :class:`MultiProcessDataFlow`: each datapoint exactly once per pass. Every
  worker runs the dataflow and keeps its shard of it (or runs its own
  dataflow from ``worker_factory``); passes are delivered one after the other.
- :class:`MultiProcessRunner` (tensorpack's, alias ``PrefetchData``) and
  :class:`MultiProcessRunnerZMQ` (alias ``PrefetchDataZMQ``): every worker runs
  the *whole* dataflow, forever, each with its own random seed; a pass of the
  runner is ``len(ds)`` datapoints from whichever workers produced them first
  (so it assumes datapoints are i.i.d., as in tensorpack).

In both, a thread per worker reads its frames ahead of the iteration
(:mod:`._readers`), and a worker sends the small datapoints it makes quickly
several per frame (:mod:`._worker_main`).

Workers send datapoints to the trainer as msgpack frames (:mod:`.codec`)
through pipes; nothing is unpickled from them. Pickle is used once, to start
the workers: the dataflow (or ``worker_factory``) and ``map_func`` go by
cloudpickle, so lambdas, closures and classes of the training script work
(sent by value), and objects of modules are imported by the workers. Workers
never re-run the main script (see :mod:`._worker_pool`), so a training script that
imports TensorFlow does not make its workers import it.
"""
from __future__ import annotations

import collections
from collections.abc import Callable, Iterator
from typing import Any

from trainstack.loop.checks import check_int

from ._worker_main import run_worker
from ._worker_pool import (
    Worker,
    WorkerProcesses,
    pickle_payload,
    worker_seeds,
)
from .base import ProxyDataFlow
from .errors import FrameError
from .protocol import MAX_EMPTY_PASSES, dataflow_len_or_none

#: How many frames :class:`MultiProcessDataFlow`'s reader threads take ahead of the iteration, per
#: worker: enough that a worker rarely waits while another's frame is read, few for large ones.
_FRAMES_AHEAD_PER_WORKER = 2

__all__ = ["MultiProcessDataFlow", "MultiProcessRunner", "MultiProcessRunnerZMQ", "PrefetchData",
           "PrefetchDataZMQ", "MultiProcessPrefetchData"]


class MultiProcessDataFlow(WorkerProcesses):
    """A dataflow whose datapoints are produced by ``num_workers`` worker processes.

    Give either ``dataflow``, which every worker runs, worker ``i`` keeping the
    datapoints ``k`` with ``k % num_workers == i`` (so put heavy per-datapoint
    work in ``map_func``, which a worker applies only to the datapoints it
    keeps), or ``worker_factory(i, num_workers)``, which returns worker ``i``'s
    own dataflow; a pass is then the union of the workers' passes. ``size``
    (datapoints per pass) defaults to ``len(dataflow)``.

    The shards of one pass are a partition only if every worker iterates the
    dataflow in the same order: the workers of a ``dataflow`` all get the same
    random seed (:func:`fix_rng_seed`'s, or a fresh one at each start), so a
    shuffling :class:`DataFromList` or any :class:`RNGDataFlow` shuffles the
    same way in each. ``worker_factory`` workers get distinct seeds.

    Each datapoint arrives exactly once per pass: frames carry their pass
    number, and pass ``p`` is delivered completely (every worker's
    ``end_of_pass``) before any datapoint of pass ``p + 1``; a worker that runs
    ahead waits on its full pipe. Datapoints of one pass arrive in whatever
    order the workers produce them. A thread per worker reads its frames (up
    to two per worker in all) while the iteration's thread works on others, and
    once a pass is whole, reads the next pass ahead.

    Workers start on :meth:`reset_state` (or the first iteration) and stop on
    :meth:`close`, when this object is collected, or at exit; they also exit
    when the trainer's process dies. A worker that fails or dies makes the
    iteration raise :class:`InputWorkerError` (its traceback, or its exit code)
    as soon as it happens, after every worker was stopped and joined and its pipe
    closed; the dataflow then refuses to iterate until :meth:`reset_state`.
    Iterate from one thread at a time.

    ``start_method`` is multiprocessing's; ``"spawn"`` (the default) is the safe
    one once TensorFlow is loaded, ``"fork"`` starts fastest but is unsafe once
    TensorFlow has started its threads.
    """

    def __init__(self, dataflow: Any = None, num_workers: int = 2, *,
                 worker_factory: Callable[[int, int], Any] | None = None,
                 map_func: Callable[[Any], Any] | None = None, size: int | None = None,
                 start_method: str = "spawn") -> None:
        if (dataflow is None) == (worker_factory is None):
            raise ValueError("MultiProcessDataFlow needs either a dataflow or a worker_factory(index, "
                             f"num_workers), not {'both' if dataflow is not None else 'neither'}")
        num_workers = check_int(type(self).__name__, "num_workers", num_workers, minimum=1)
        for what, fn in (("worker_factory", worker_factory), ("map_func", map_func)):
            if fn is not None and not callable(fn):
                raise TypeError(f"{what} must be callable, got {fn!r}")
        size = check_int(type(self).__name__, "size", size, minimum=1, none_ok=True,
                         note="datapoints per pass")
        self._init_workers(start_method)
        self.dataflow = dataflow
        self.num_workers = num_workers
        self.worker_factory = worker_factory
        self.map_func = map_func
        self.size = size
        self._next_pass = 0

    @property
    def name(self) -> str:
        return f"MultiProcessDataFlow({self.num_workers} workers)"

    def __len__(self) -> int:
        if self.size is not None:
            return self.size
        if self.dataflow is None:
            raise TypeError(f"{self.name} with a worker_factory does not know its size: pass size=")
        return len(self.dataflow)

    def reset_state(self) -> None:
        """(Re)start the workers; the next iteration is their first pass."""
        self.close()
        payload = pickle_payload((self.dataflow, self.worker_factory, self.map_func),
                                           "the dataflow, worker_factory and map_func", self.name)
        sharded = self.worker_factory is None
        seeds = worker_seeds(self.num_workers, shared=sharded)
        kwargs = [{"payload": payload, "index": i, "count": self.num_workers, "sharded": sharded,
                   "seed": seeds[i]} for i in range(self.num_workers)]
        self._start(run_worker, kwargs, read_ahead=_FRAMES_AHEAD_PER_WORKER * self.num_workers, gated=True)
        self._next_pass = 0

    def __iter__(self) -> Iterator[Any]:
        """The datapoints of the next pass, from all workers."""
        self._ensure_started()
        pass_num, self._next_pass = self._next_pass, self._next_pass + 1
        workers, readers = self._workers, self._readers
        assert readers is not None  # started with read_ahead
        readers.open_pass(pass_num)  # (already open unless the pass before was abandoned midway)
        with self._reading():  # any failure stops every worker before it propagates
            while any(w.pass_num <= pass_num for w in workers):
                w, frame = self._next_frame()
                if frame["kind"] not in ("chunk", "end_of_pass") or frame["pass_num"] != w.pass_num:
                    raise FrameError(f"{self.name}: worker {w.index} sent a {frame['kind']!r} frame "
                                     f"{frame.get('pass_num', '')} while on pass {w.pass_num}")
                if frame["kind"] == "end_of_pass":
                    w.pass_num += 1
                elif frame["pass_num"] == pass_num:
                    yield from frame["datapoints"]
                # else: datapoints of an earlier pass whose iteration was abandoned midway
        readers.open_pass(pass_num + 1)  # whole: the workers may send the next pass ahead

    def _during(self, w: Worker) -> str:
        return f" during pass {w.pass_num}"


class MultiProcessRunner(WorkerProcesses, ProxyDataFlow):
    """tensorpack's ``MultiProcessRunner``: ``num_proc`` worker processes each run the whole
    dataflow ``ds`` (each calls ``ds.reset_state()`` once, so each gets its own random seed)
    pass after pass, forever; this dataflow yields their datapoints as they come.

    One pass (``__iter__``) is ``len(ds)`` datapoints, or endless when ``ds`` has no size;
    ``len`` is ``len(ds)``. With several workers a pass is not one pass of ``ds``: datapoints
    are assumed i.i.d., as in tensorpack. For each datapoint exactly once per pass, use
    :class:`MultiProcessDataFlow` (workers keep shards) or :class:`MultiProcessMapData`.

    A thread per worker reads its datapoints as they come, up to ``num_prefetch`` frames ahead
    of the iteration in all (tensorpack's buffer of ``num_prefetch``), so that no worker waits
    while another's datapoint is read or while the trainer trains; beyond that, each worker runs
    ahead until its pipe is full (up to 1 MiB on Linux). A frame holds one datapoint, or several
    small ones that a worker made within a few milliseconds (at most 64, 64 KiB in all): one
    message per chunk, not per datapoint.

    Differences from tensorpack: ``ds`` is sent to the workers by cloudpickle (spawned, not
    forked: lambdas and script-defined classes work, locks and open files do not);
    ``reset_state`` may be called again, and restarts the workers. With a seed from
    :func:`fix_rng_seed`, worker ``i`` uses seed ``seed + 1 + i``.
    """

    def __init__(self, ds: Any, num_prefetch: int, num_proc: int, *, start_method: str = "spawn") -> None:
        ProxyDataFlow.__init__(self, ds)
        self.num_prefetch = check_int(type(self).__name__, "num_prefetch", num_prefetch, minimum=1)
        self.num_proc = check_int(type(self).__name__, "num_proc", num_proc, minimum=1)
        self._init_workers(start_method)
        #: datapoints received and not yet yielded (the rest of a chunk when a pass ended in it)
        self._ahead: collections.deque[Any] = collections.deque()

    @property
    def name(self) -> str:
        return f"{type(self).__name__}({self.num_proc} workers)"

    def reset_state(self) -> None:
        """(Re)start the workers; ``ds.reset_state()`` runs in each of them, not here."""
        payload = pickle_payload((self.ds, None, None), "the dataflow", self.name)
        seeds = worker_seeds(self.num_proc, shared=False)
        kwargs = [{"payload": payload, "index": i, "count": self.num_proc, "sharded": False,
                   "seed": seeds[i], "max_empty_passes": MAX_EMPTY_PASSES} for i in range(self.num_proc)]
        self._start(run_worker, kwargs, read_ahead=self.num_prefetch)
        self._ahead.clear()  # the old workers' datapoints go with them

    def __iter__(self) -> Iterator[Any]:
        self._ensure_started()
        remaining = dataflow_len_or_none(self.ds)  # None: endless
        ahead = self._ahead
        with self._reading():  # any failure stops every worker before it propagates
            while remaining is None or remaining > 0:
                if not ahead:
                    ahead.extend(self._next_chunk())
                    continue
                yield ahead.popleft()
                if remaining is not None:
                    remaining -= 1

    def _next_chunk(self) -> list[Any]:
        """The datapoints of the next frame from any worker (none for an ``end_of_pass``)."""
        _, frame = self._next_frame()
        if frame["kind"] != "chunk":
            return []  # end_of_pass: the runner does not count the workers' passes
        return frame["datapoints"]  # type: ignore[no-any-return]


class MultiProcessRunnerZMQ(MultiProcessRunner):
    """tensorpack's ``MultiProcessRunnerZMQ``, on the same pipes as :class:`MultiProcessRunner`
    (no ZeroMQ): ``num_proc`` workers each run the whole ``ds`` forever; a pass is ``len(ds)``
    of their datapoints, in the order they arrive. ``hwm`` (ZeroMQ's high-water mark) is the
    runner's ``num_prefetch``: how many datapoints the reader threads take ahead of the
    iteration, as ZeroMQ's I/O thread did. Datapoints travel as msgpack
    (lists, dicts, numbers, str, bytes, NumPy arrays), as tensorpack's did."""

    def __init__(self, ds: Any, num_proc: int = 1, hwm: int = 50, *, start_method: str = "spawn") -> None:
        super().__init__(ds, num_prefetch=check_int(type(self).__name__, "hwm", hwm, minimum=1),
                         num_proc=num_proc,
                         start_method=start_method)
        self.hwm = hwm


#: tensorpack's older names
PrefetchData = MultiProcessRunner
MultiProcessPrefetchData = MultiProcessRunner
PrefetchDataZMQ = MultiProcessRunnerZMQ
