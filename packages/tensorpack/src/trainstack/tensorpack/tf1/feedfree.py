"""tensorpack 003's feedfree trainers: a SimpleTrainer whose ``config.data`` must be a FeedfreeInput.

``FeedfreeTrainerBase(config)``, ``SingleCostFeedfreeTrainer(config)``, ``SimpleFeedfreeTrainer(config)``
train like ``launch_train_with_config(config, SimpleTrainer())`` (see :mod:`.legacy.compat`).
"""
from __future__ import annotations

from typing import Any

from trainstack.inputs import FeedfreeInput
from trainstack.towers.run.config import TrainConfig

from .trainers import SimpleTrainer

__all__ = ["FeedfreeTrainerBase", "SingleCostFeedfreeTrainer", "SimpleFeedfreeTrainer"]


class FeedfreeTrainerBase(SimpleTrainer):
    """Older base of trainers that read their input inside the graph: ``config.data`` must be
    a FeedfreeInput (e.g. ``QueueInput(dataflow)``). Trains like SimpleTrainer."""

    #: its deprecation warning names SimpleTrainer() as the current form
    older_feedfree = True

    def __init__(self, config: TrainConfig, **kwargs: Any) -> None:
        if not isinstance(config, TrainConfig):
            raise TypeError(f"{type(self).__name__} is the older API and takes a TrainConfig, got "
                            f"{config!r:.80}; the current form is launch_train_with_config(config, "
                            "SimpleTrainer())")
        if not isinstance(config.data, FeedfreeInput):
            got = (f"dataflow={type(config.dataflow).__name__}" if config.data is None
                   else f"data={config.data.name}")
            raise TypeError(f"{type(self).__name__} needs TrainConfig(data=) to be a FeedfreeInput "
                            f"(QueueInput(dataflow), TFDatasetInput, ...), got {got}; "
                            "QueueInputTrainer(config) wraps a dataflow for you")
        super().__init__(config, **kwargs)


class SingleCostFeedfreeTrainer(FeedfreeTrainerBase):
    """Older feedfree trainer of a single cost (the model's ``build_graph`` result)."""


class SimpleFeedfreeTrainer(SingleCostFeedfreeTrainer):
    """Older name of "SimpleTrainer with ``config.data`` a FeedfreeInput"."""
