"""The worker processes of ``MultiProcessDatasetPredictor``: start, talk to, watch and stop them.

Each worker is a spawned process (TensorFlow must not be forked) that unpickles the
PredictConfig the parent pickled, builds its OfflinePredictor, reports ``ready`` (or its
start-up exception, traceback included) and only then predicts the datapoints it is sent, one
at a time, answering ``(pass, index, outputs)``, as tensorpack's
``MultiProcessQueuePredictWorker``. Where tensorpack's workers shared one input and one output
``multiprocessing.Queue``, each worker here has its own input pipe and output pipe, whose other
ends the parent closes: a worker that dies then reads as end-of-file at once. A shared queue
cannot promise that: a worker killed inside ``Queue.get`` keeps its lock forever, and one killed
while writing a large result leaves half a message that the reader waits on without end.
"""
from __future__ import annotations

import dataclasses
import multiprocessing as mp
import os
import pickle
import queue
import signal
import sys
import threading
import traceback
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import Any

import cloudpickle

from trainstack.towers import OfflinePredictor, PredictConfig

from ..tf1 import get_num_gpu
from ..utils.concurrency import _mask_sigint
from ..utils.gpu import change_gpu

__all__: list[str] = []

WHO = "MultiProcessDatasetPredictor"
#: datapoints sent to a worker and not yet answered, at most (tensorpack queued 2 * nr_proc in all)
MAX_IN_FLIGHT = 2
#: how long the parent waits for a message before it checks the workers again, in seconds
POLL_SECONDS = 1.0
_start_lock = threading.Lock()  # CUDA_VISIBLE_DEVICES is the starting worker's while it starts


@dataclasses.dataclass(eq=False)
class PredictWorker:
    """The parent's handle of one worker: its process, its GPU (``"-1"``: the CPU), the ends of
    its pipes, whether it reported ready (and what it saw), its datapoints in flight and answered."""

    index: int
    gpu: str
    process: BaseProcess
    tasks: Connection
    results: Connection
    ready: dict[str, Any] | None = None
    in_flight: int = 0
    answered: int = 0

    @property
    def name(self) -> str:
        where = "the CPU" if self.gpu == "-1" else f"GPU {self.gpu}"
        return f"{WHO} worker {self.index} (pid {self.process.pid}, on {where})"


class WorkerFailed(RuntimeError):
    """A worker failed to start, raised on a datapoint, or died."""


def worker_gpus(nr_proc: int, use_gpu: bool) -> list[str]:
    """The GPU each of ``nr_proc`` workers gets, as tensorpack chose them: the first ``nr_proc``
    of ``CUDA_VISIBLE_DEVICES``, else of ``get_num_gpu()``'s; ``"-1"`` (no GPU) without ``use_gpu``."""
    if not use_gpu:
        return ["-1"] * nr_proc
    count = get_num_gpu()
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    gpus = ([e.strip() for e in visible.split(",") if e.strip()][:count] if visible is not None
            else [str(k) for k in range(count)])
    if len(gpus) < nr_proc:
        raise ValueError(f"{WHO}(nr_proc={nr_proc}): only {len(gpus)} GPU(s) available, one per process; "
                         "pass use_gpu=False to predict on the CPU")
    return gpus[:nr_proc]


def pickle_config(config: PredictConfig) -> bytes:
    """``config`` pickled for the workers; what cannot be pickled is a TypeError naming it.

    By reference where the workers can import it (pickle): the model's class from its module, or
    from the main script, which a spawned process imports again; so AutoGraph finds its source
    there as here. By value (cloudpickle) what pickle refuses (lambdas, closures) and everything
    of a main module that the workers do not import again (``python -c``, ``python -m``, a
    notebook); AutoGraph cannot read such code's source and traces it as written."""
    if _main_is_imported_again():
        try:
            return pickle.dumps(config, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # noqa: BLE001, S110 - pickling raises several kinds; cloudpickle may still do
            pass
    try:
        return cloudpickle.dumps(config, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as e:  # noqa: BLE001 - pickling raises several kinds
        path, part = _unpicklable_part(config, "config")
        raise TypeError(
            f"{WHO}: the PredictConfig goes to each worker process pickled, and {path} "
            f"({type(part).__name__}) cannot be pickled: {type(e).__name__}: {e}. A config that a predictor "
            "was already built from holds its traced tower: pass a new PredictConfig(model=Model(), ...), "
            "the workers build their own") from e


def _main_is_imported_again() -> bool:
    """Whether a spawned process imports this program's main module again (as ``__mp_main__``), as
    multiprocessing's spawn does: a main script by its path or a module by its name, not a
    package's ``__main__``, and nothing for ``python -c`` or an interactive session."""
    main = sys.modules.get("__main__")
    name = getattr(getattr(main, "__spec__", None), "name", None)
    if name is not None:
        return not (name == "__main__" or name.endswith(".__main__"))
    return getattr(main, "__file__", None) is not None


def _unpicklable_part(obj: Any, path: str, seen: set[int] | None = None) -> tuple[str, Any]:
    """The innermost attribute or item of ``obj`` (which fails to pickle) that fails to pickle."""
    seen = set() if seen is None else seen
    seen.add(id(obj))
    if isinstance(obj, dict):
        parts = [(f"{path}[{k!r}]", v) for k, v in obj.items()]
    elif isinstance(obj, (list, tuple)):
        parts = [(f"{path}[{i}]", v) for i, v in enumerate(obj)]
    elif isinstance(getattr(obj, "__dict__", None), dict):
        parts = [(f"{path}.{k}", v) for k, v in vars(obj).items()]
    else:
        parts = []
    for part_path, part in parts:
        if id(part) in seen:  # a cycle back to an object being looked into
            continue
        try:
            cloudpickle.dumps(part)
        except Exception:  # noqa: BLE001 - pickling raises several kinds
            return _unpicklable_part(part, part_path, seen)
    return path, obj


def start_workers(payload: bytes, gpus: list[str]) -> list[PredictWorker]:
    """Spawn one worker per entry of ``gpus``, each seeing only its GPU (``CUDA_VISIBLE_DEVICES``
    while it starts; ``-1``: none) and ignoring SIGINT (Ctrl-C stops the parent, which stops them)."""
    ctx = mp.get_context("spawn")
    workers: list[PredictWorker] = []
    try:
        for index, gpu in enumerate(gpus):
            task_reader, task_writer = ctx.Pipe(duplex=False)
            result_reader, result_writer = ctx.Pipe(duplex=False)
            process = ctx.Process(target=_work, args=(payload, task_reader, result_writer),
                                  name=f"{WHO}-worker-{index}", daemon=True)
            try:
                with _start_lock, change_gpu(gpu), _mask_sigint():
                    process.start()
            except BaseException:
                for conn in (task_writer, result_reader):
                    conn.close()
                raise
            finally:  # the worker's ends: its death then reads as end-of-file here
                task_reader.close()
                result_writer.close()
            workers.append(PredictWorker(index, gpu, process, task_writer, result_reader))
    except BaseException:
        stop_workers(workers)
        raise
    return workers


def stop_workers(workers: list[PredictWorker], timeout: float = 5.0) -> None:
    """End every worker: its pipes close (its signal to exit), then it is joined, terminated if it
    does not exit within ``timeout`` seconds, killed if it ignores that. Safe to call twice."""
    for w in workers:
        w.tasks.close()
        w.results.close()
    for w in workers:
        if w.ready is None and w.process.is_alive():  # still starting: no work of it to let finish
            w.process.terminate()
    for w in workers:
        w.process.join(timeout)
        if w.process.is_alive():
            w.process.terminate()
            w.process.join(timeout)
        if w.process.is_alive():
            w.process.kill()
            w.process.join(timeout)


def send(w: PredictWorker, pass_id: int, index: int, datapoint: Any) -> None:
    """Send datapoint ``index`` of pass ``pass_id`` to worker ``w`` (pickled here: a datapoint that
    cannot be pickled is an error in this process)."""
    try:
        task = pickle.dumps((pass_id, index, datapoint), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as e:  # noqa: BLE001 - pickling raises several kinds
        raise TypeError(f"{WHO}: datapoint {index} of the dataflow cannot be pickled to go to a worker "
                        f"process: {type(e).__name__}: {e}") from e
    try:
        w.tasks.send_bytes(task)
    except OSError:  # the worker is gone: its pipe is broken
        raise failure(w) from None
    w.in_flight += 1


def receive(workers: list[PredictWorker]) -> list[tuple[PredictWorker, tuple[Any, ...]]]:
    """The messages the workers sent, waiting up to :data:`POLL_SECONDS` for one. A worker's error
    message, or a worker that exited, raises :class:`WorkerFailed` naming it."""
    by_conn = {w.results: w for w in workers}
    by_sentinel = {w.process.sentinel: w for w in workers}
    messages = []
    for obj in wait([*by_conn, *by_sentinel], POLL_SECONDS):
        if obj in by_conn:
            w = by_conn[obj]
            messages.append((w, _read(w)))
    for w in workers:  # also between messages: a dead worker is an error at once
        check_alive(w)
    return messages


def check_alive(w: PredictWorker) -> None:
    """Raise :class:`WorkerFailed` if worker ``w`` exited (with its error message, if it sent one)."""
    if w.process.exitcode is not None:
        while w.results.poll(0):
            _read(w)  # raises with the worker's own error, if it sent one before it exited
        raise failure(w)


def _read(w: PredictWorker) -> tuple[Any, ...]:
    try:
        message = pickle.loads(w.results.recv_bytes())
    except (EOFError, OSError):  # the worker exited, maybe in the middle of a message
        raise failure(w) from None
    if message[0] == "error":
        raise WorkerFailed(f"{w.name} {message[1]}\n\nThe worker's traceback:\n{message[2]}")
    if message[0] == "ready":
        w.ready = message[1]
    else:
        w.in_flight -= 1
        w.answered += 1
    return message


def failure(w: PredictWorker) -> WorkerFailed:
    """The error for worker ``w``, which exited without saying why."""
    w.process.join(1.0)
    code = w.process.exitcode
    how = "is not running" if code is None else f"exited with exit code {code}"
    if code is not None and code < 0 and -code in signal.valid_signals():
        how += f" (killed by {signal.Signals(-code).name})"
    when = ("before it was ready; its stderr says why (e.g. the main script, which a spawned process "
            "imports again, runs the predictor without an `if __name__ == '__main__':` guard)"
            if w.ready is None else f"with {w.in_flight} datapoint(s) not predicted")
    return WorkerFailed(f"{w.name} {how} {when}")


# -- the worker process ----------------------------------------------------------------------

def _work(payload: bytes, tasks: Connection, results: Connection) -> None:
    """A worker's life: build the predictor, report, then predict each datapoint sent until its
    input pipe closes. It exits with code 1 after reporting an error."""
    def report(message: tuple[Any, ...]) -> None:
        results.send_bytes(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))

    try:
        try:
            config = pickle.loads(payload)
        except Exception as e:  # noqa: BLE001 - reported to the parent with its traceback
            report(("error", f"failed to start: unpickling the PredictConfig raised {type(e).__name__}: {e} (its "
                             "model's class must be importable in the worker: from a module on sys.path, or the "
                             "main script)", traceback.format_exc()))
            sys.exit(1)
        try:
            predictor = OfflinePredictor(config)
        except Exception as e:  # noqa: BLE001 - reported to the parent with its traceback
            report(("error", f"failed to start: OfflinePredictor(config) raised {type(e).__name__}: {e}",
                    traceback.format_exc()))
            sys.exit(1)
        import tensorflow as tf  # noqa: PLC0415 - imported by the predictor already

        report(("ready", {"pid": os.getpid(), "CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES"),
                          "gpus": len(tf.config.list_physical_devices("GPU"))}))
        inbox: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        # read ahead in a thread: the parent's send never waits on this worker's own send
        threading.Thread(target=_read_tasks, args=(tasks, inbox), daemon=True).start()
        while (task := inbox.get()) is not None:
            index: Any = "(not unpickled)"
            try:
                pass_id, index, datapoint = pickle.loads(task)
                message = pickle.dumps(("result", pass_id, index, predictor(*datapoint)),
                                       protocol=pickle.HIGHEST_PROTOCOL)
            except Exception as e:  # noqa: BLE001 - reported to the parent with its traceback
                report(("error", f"raised on datapoint {index}: {type(e).__name__}: {e}", traceback.format_exc()))
                sys.exit(1)
            results.send_bytes(message)
    except (BrokenPipeError, ConnectionResetError):  # the parent closed the pipes: it wants no more
        sys.exit(0)


def _read_tasks(tasks: Connection, inbox: queue.SimpleQueue[bytes | None]) -> None:
    try:
        while True:
            inbox.put(tasks.recv_bytes())
    except (EOFError, OSError):  # the parent closed the pipe: the worker's end
        inbox.put(None)
