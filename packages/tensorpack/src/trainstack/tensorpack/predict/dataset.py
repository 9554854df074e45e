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
inputs, in ``input_names`` order. ``MultiProcessDatasetPredictor`` is a stand-in, listed in
``_replaced``.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from trainstack.inputs import reset_dataflow
from trainstack.towers import OfflinePredictor, PredictConfig

from .._replaced import stand_in_names, unprovided

__all__ = ["DatasetPredictorBase", "SimpleDatasetPredictor"] + stand_in_names(__name__)


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


__getattr__ = unprovided(__name__)
