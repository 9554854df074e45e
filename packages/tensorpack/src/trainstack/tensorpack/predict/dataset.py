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
worker processes (``workers.py``), one per GPU or on the CPU, as tensorpack's.
"""
from __future__ import annotations

import weakref
from collections.abc import Iterator
from typing import Any

from trainstack.inputs import reset_dataflow
from trainstack.loop.checks import check_bool, check_int
from trainstack.towers import OfflinePredictor, PredictConfig

from .._replaced import stand_in_names, unprovided
from . import workers as _workers

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

    def _start_pass(self) -> Any:
        """Reset the dataflow for a new pass; the pass's progress bar (a ``tqdm``, shown when the
        dataflow has a size)."""
        reset_dataflow(self.dataset)
        try:
            total = len(self.dataset)
        except (TypeError, NotImplementedError):
            total = 0
        from tqdm import tqdm  # noqa: PLC0415 - a dependency of trainstack-callbacks

        return tqdm(total=total, disable=total == 0, leave=False)


class SimpleDatasetPredictor(DatasetPredictorBase):
    """Predicts each datapoint of ``dataset`` in this process with an OfflinePredictor of
    ``config``; outputs are lists of NumPy arrays (``(inputs, outputs)`` with
    ``PredictConfig(return_input=True)``). A progress bar shows when the dataflow has a size."""

    def __init__(self, config: PredictConfig, dataset: Any) -> None:
        super().__init__(config, dataset)
        self.predictor = OfflinePredictor(config)

    def get_result(self) -> Iterator[Any]:
        with self._start_pass() as bar:
            for dp in self.dataset:
                yield self.predictor(*dp)
                bar.update()


class MultiProcessDatasetPredictor(DatasetPredictorBase):
    """tensorpack's: predicts ``dataset`` in ``nr_proc`` worker processes, each with its own
    OfflinePredictor of ``config``, on GPU ``k`` (``use_gpu``: the first ``nr_proc`` of
    ``CUDA_VISIBLE_DEVICES``, else of ``get_num_gpu()``'s; too few is a ValueError) or on the CPU.
    :meth:`get_result` yields each datapoint's outputs (``(inputs, outputs)`` with ``return_input``)
    in the dataflow's order (``ordered``) or as the workers finish them; at most
    ``2 * nr_proc`` datapoints are in flight.

    The workers are spawned: ``config`` is pickled here (an unpicklable part is a TypeError naming
    it), so its model's class must be importable in a fresh process (a module, or the main script,
    which spawn imports again: keep its work under ``if __name__ == "__main__":``). A worker that
    fails to start, raises on a datapoint or dies makes :meth:`get_result` raise, naming it, and
    ends every worker. They also end with :meth:`close`, a ``with`` block, or the predictor's
    collection (tensorpack's ran until the dataflow's end)."""

    def __init__(self, config: PredictConfig, dataset: Any, nr_proc: int, use_gpu: bool = True,
                 ordered: bool = True) -> None:
        super().__init__(config, dataset)
        who = type(self).__name__
        self.nr_proc = check_int(who, "nr_proc", nr_proc, minimum=1)
        self.ordered = check_bool(who, "ordered", ordered)
        gpus = _workers.worker_gpus(self.nr_proc, check_bool(who, "use_gpu", use_gpu))
        payload = _workers.pickle_config(config)
        self._workers = _workers.start_workers(payload, gpus)
        self._finalizer = weakref.finalize(self, _workers.stop_workers, self._workers)
        self._pass = 0
        self._failed: str | None = None

    @property
    def workers(self) -> list[Any]:
        """The worker processes (``multiprocessing`` process objects), worker ``k`` on GPU ``k``."""
        return [w.process for w in self._workers]

    def get_result(self) -> Iterator[Any]:
        if self._failed is not None:
            raise RuntimeError(f"{type(self).__name__}.get_result(): its workers were ended when a pass failed "
                               f"({self._failed}); make a new predictor")
        if not self._finalizer.alive:
            raise RuntimeError(f"{type(self).__name__}.get_result() after close(): make a new predictor")
        self._pass += 1  # results of an earlier pass left unread (an abandoned iteration) are dropped
        with self._start_pass() as bar:
            try:
                for outputs in self._predict(self._pass):
                    yield outputs
                    bar.update()
            except GeneratorExit:
                raise
            except BaseException as e:
                if self._finalizer.alive:
                    self._failed = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                    self.close()
                raise

    def _predict(self, pass_id: int) -> Iterator[Any]:
        datapoints = enumerate(self.dataset)
        exhausted, sent, done, next_index = False, 0, 0, 0
        finished: dict[int, Any] = {}
        while any(w.ready is None for w in self._workers):  # each reports ready, or why it cannot start
            _workers.receive(self._workers)
        while True:
            self._check()
            while not exhausted:
                free = [w for w in self._workers if w.ready is not None and w.in_flight < _workers.MAX_IN_FLIGHT]
                if not free:
                    break
                item = next(datapoints, None)
                if item is None:
                    exhausted = True
                else:
                    _workers.send(min(free, key=lambda w: w.in_flight), pass_id, *item)
                    sent += 1
            if exhausted and done == sent:
                return
            for _, message in _workers.receive(self._workers):
                if message[0] == "result" and message[1] == pass_id:
                    finished[message[2]] = message[3]
                    done += 1
            while (next_index in finished) if self.ordered else finished:
                outputs = finished.pop(next_index if self.ordered else next(iter(finished)))
                next_index += 1
                self._check()  # a worker that died meanwhile is an error before any more output
                yield outputs

    def _check(self) -> None:
        """Raise if the predictor was closed, or a worker exited."""
        if not self._finalizer.alive:
            raise RuntimeError(f"{type(self).__name__} was closed during get_result()")
        for w in self._workers:
            _workers.check_alive(w)

    def close(self) -> None:
        """End the worker processes (also at the end of a ``with`` block, and when collected)."""
        self._finalizer()

    def __enter__(self) -> MultiProcessDatasetPredictor:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


__getattr__ = unprovided(__name__)
