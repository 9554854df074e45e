"""The single-tower trainers: SimpleTrainer, QueueInputTrainer, NoOpTrainer."""
from __future__ import annotations

from typing import Any

from trainstack.inputs import FeedInput, InputSource, QueueInput
from trainstack.loop.checks import check_int

from .single_cost import SingleCostTrainer
from .step_options import StepOptions

__all__ = ["SimpleTrainer", "QueueInputTrainer", "NoOpTrainer"]


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


class QueueInputTrainer(SimpleTrainer):
    """A SimpleTrainer whose dataflow goes through a :class:`QueueInput` (a FeedInput's too).

    ``input_queue``: tensorpack took a ``tf.QueueBase``; QueueInput makes its
    own ``tf.queue.FIFOQueue``, so give its capacity (an int, default 50).
    """

    def __init__(self, config: Any = None, input_queue: int | None = None, *,
                 options: StepOptions | None = None, **step_options: Any) -> None:
        self.input_queue = check_int("QueueInputTrainer", "input_queue", input_queue, minimum=1, none_ok=True,
                                     note="the queue's capacity: QueueInput makes its own tf.queue.FIFOQueue")
        super().__init__(config, options=options, **step_options)

    def _as_input_source(self, input: Any) -> InputSource:
        if isinstance(input, FeedInput):
            input = input.dataflow
        elif isinstance(input, InputSource):
            return input
        return QueueInput(input) if self.input_queue is None else QueueInput(input, self.input_queue)

    def default_input(self, dataflow: Any) -> InputSource:
        """A queue of ``input_queue`` elements (QueueInput's default capacity for None)."""
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
