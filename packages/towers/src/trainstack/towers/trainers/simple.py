"""The single-tower trainers: SimpleTrainer, NoOpTrainer."""
from __future__ import annotations

from typing import Any

from trainstack.inputs import FeedInput, InputSource, QueueInput

from .single_cost import SingleCostTrainer

__all__ = ["SimpleTrainer", "NoOpTrainer"]


class SimpleTrainer(SingleCostTrainer):
    """One training tower, one cost: builds the model once and minimizes its cost.

    Takes an InputSource, or a dataflow, which it feeds with ``FeedInput(dataflow)``
    (``QueueInput(dataflow)`` with ``steps_per_run`` above 1: a feed is one batch per call).
    """

    def _as_input_source(self, input: Any) -> InputSource:
        if isinstance(input, InputSource):
            return input
        return FeedInput(input) if self.steps_per_run == 1 else QueueInput(input)

    def default_input(self, dataflow: Any) -> InputSource:
        """A dataflow given to ``launch_train_with_config`` is fed (``FeedInput``), as tensorpack's
        SimpleTrainer did; queued with ``steps_per_run`` above 1 (a feed is one batch per call)."""
        return self._as_input_source(dataflow)


class NoOpTrainer(SimpleTrainer):
    """Builds the model and runs a step that computes the cost but updates nothing.

    For running callbacks (evaluation, summaries) over a model without
    training it. ``get_opt_fn`` may be None; when given, the optimizer is
    created (``trainer.optimizer``, checkpointed) but never applied.
    """

    _trains = False

    def default_input(self, dataflow: Any) -> InputSource:
        """A dataflow given to ``launch_train_with_config`` goes through a ``QueueInput``."""
        return QueueInput(dataflow)
