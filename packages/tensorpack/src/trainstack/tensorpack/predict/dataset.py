"""tensorpack 0.11's ``tensorpack.predict.dataset``: predict over a whole dataflow.

::

    pred = SimpleDatasetPredictor(PredictConfig(model=Model(), session_init=SmartInit(ckpt),
                                                input_names=['image'], output_names=['prob']),
                                  BatchData(test_df, 64))
    for outputs in pred.get_result():   # one list of arrays per datapoint of the dataflow
        ...
    all_outputs = pred.get_all_result()

The predictor is the core's :class:`~trainstack.towers.OfflinePredictor`, built (and
its ``session_init`` restored) when the SimpleDatasetPredictor is made; the core calls it on
each datapoint of a dataflow itself. Each datapoint of the dataflow must hold the predictor's
inputs, in ``input_names`` order. :class:`MultiProcessDatasetPredictor` runs such predictors in
worker processes, one per GPU (or on the CPU), as tensorpack's.
"""
from __future__ import annotations

import multiprocessing
import os
import queue
import weakref
from collections.abc import Iterator
from typing import Any

from trainstack.inputs import reset_dataflow
from trainstack.loop.checks import check_bool, check_int
from trainstack.towers import OfflinePredictor, PredictConfig

from .._replaced import stand_in_names, unprovided
from ..tf1 import get_num_gpu

__all__ = ["DatasetPredictorBase", "SimpleDatasetPredictor", "MultiProcessDatasetPredictor"] + stand_in_names(__name__)


class DatasetPredictorBase:
    """Runs a predictor on every datapoint of a dataflow: :meth:`get_result` yields the outputs."""

    def __init__(self, config: PredictConfig, dataset: Any) -> None:
        if not isinstance(config, PredictConfig):
            raise TypeError(f"{type(self).__name__} takes a PredictConfig, got {config!r}")
        if not hasattr(dataset, "__iter__"):
            raise TypeError(f"{type(self).__name__} takes a dataflow (an iterable of datapoints), "
                            f"got {dataset!r}")
        self.config = config
        self.dataset = dataset

    def get_result(self) -> Iterator[Any]:
        """Yield the predictor's output for each datapoint of the dataflow, in order."""
        raise NotImplementedError

    def get_all_result(self) -> list[Any]:
        """Every output of :meth:`get_result`, in a list."""
        return list(self.get_result())


class SimpleDatasetPredictor(DatasetPredictorBase):
    """Predicts each datapoint of ``dataset`` in this process with an OfflinePredictor of
    ``config``; outputs are lists of NumPy arrays (``(inputs, outputs)`` with
    ``PredictConfig(return_input=True)``). A progress bar shows when the dataflow has a size."""

    def __init__(self, config: PredictConfig, dataset: Any) -> None:
        super().__init__(config, dataset)
        self.predictor = OfflinePredictor(config)

    def get_result(self) -> Iterator[Any]:
        reset_dataflow(self.dataset)
        try:
            total = len(self.dataset)
        except (TypeError, NotImplementedError):
            total = 0
        from tqdm import tqdm  # noqa: PLC0415 - a dependency of trainstack-callbacks

        with tqdm(total=total, disable=total == 0, leave=False) as bar:
            for dp in self.dataset:
                yield self.predictor(*dp)
                bar.update()



class MultiProcessDatasetPredictor(DatasetPredictorBase):
    """tensorpack's: predicts ``dataset`` in ``nr_proc`` worker processes, each with its own
    OfflinePredictor of ``config`` on GPU ``k`` (``use_gpu``: the first ``nr_proc`` of
    ``CUDA_VISIBLE_DEVICES``, else of ``get_num_gpu()``'s) or on the CPU. :meth:`get_result` yields
    the outputs in the dataflow's order (``ordered``) or as the workers finish them; at most
    ``2 * nr_proc`` datapoints are in flight.

    The workers are spawned (a fresh interpreter each: the config is pickled, so its ModelDesc's class
    must be importable, as a script's own classes are) and live until :meth:`close`, the end of a
    ``with`` block, or the predictor's collection."""

    def __init__(self, config: PredictConfig, dataset: Any, nr_proc: int, use_gpu: bool = True,
                 ordered: bool = True) -> None:
        super().__init__(config, dataset)
        self.nr_proc = check_int("MultiProcessDatasetPredictor", "nr_proc", nr_proc, minimum=1)
        self.ordered = check_bool("MultiProcessDatasetPredictor", "ordered", ordered)
        if check_bool("MultiProcessDatasetPredictor", "use_gpu", use_gpu):
            visible = os.environ.get("CUDA_VISIBLE_DEVICES")
            gpus = visible.split(",") if visible is not None else [str(k) for k in range(get_num_gpu())]
            if len(gpus) < self.nr_proc:
                raise ValueError(f"MultiProcessDatasetPredictor(nr_proc={nr_proc}): only {len(gpus)} GPU(s) "
                                 "available, one per process; pass use_gpu=False to predict on the CPU")
        else:
            gpus = ["-1"] * self.nr_proc
        context = multiprocessing.get_context("spawn")
        devices = context.Queue()
        for gpu in gpus[:self.nr_proc]:
            devices.put(gpu)
        self._pool = context.Pool(self.nr_proc, initializer=_start_worker, initargs=(config, devices))
        self._finalizer = weakref.finalize(self, _end_pool, self._pool)

    def get_result(self) -> Iterator[Any]:
        if not self._finalizer.alive:
            raise RuntimeError("MultiProcessDatasetPredictor.get_result() after close(): make a new one")
        reset_dataflow(self.dataset)
        try:
            total = len(self.dataset)
        except (TypeError, NotImplementedError):
            total = 0
        from tqdm import tqdm  # noqa: PLC0415 - a dependency of trainstack-callbacks

        done: queue.Queue = queue.Queue()
        datapoints = enumerate(self.dataset)
        in_flight, ready, next_index = 0, {}, 0

        def submit() -> bool:
            item = next(datapoints, None)
            if item is None:
                return False
            self._pool.apply_async(_predict, (item,), callback=done.put, error_callback=done.put)
            return True

        while in_flight < 2 * self.nr_proc and submit():
            in_flight += 1
        with tqdm(total=total, disable=total == 0, leave=False) as bar:
            while in_flight:
                result = done.get()
                if isinstance(result, BaseException):
                    raise RuntimeError(f"MultiProcessDatasetPredictor: a worker failed: {result!r}") from result
                in_flight -= 1
                if submit():
                    in_flight += 1
                index, outputs = result
                ready[index] = outputs
                while (next_index in ready) if self.ordered else ready:
                    key = next_index if self.ordered else next(iter(ready))
                    yield ready.pop(key)
                    next_index += 1
                    bar.update()

    def close(self) -> None:
        """End the worker processes (also at the end of a ``with`` block)."""
        self._finalizer()

    def __enter__(self) -> MultiProcessDatasetPredictor:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _end_pool(pool: Any) -> None:
    pool.terminate()
    pool.join()


_worker_predictor: Any = None


def _start_worker(config: PredictConfig, devices: Any) -> None:
    """A worker's start: its GPU (or none, ``-1``) before TensorFlow sees a device, then its predictor."""
    global _worker_predictor
    os.environ["CUDA_VISIBLE_DEVICES"] = devices.get()
    _worker_predictor = OfflinePredictor(config)


def _predict(item: tuple[int, Any]) -> tuple[int, Any]:
    index, datapoint = item
    return index, _worker_predictor(*datapoint)


__getattr__ = unprovided(__name__)
