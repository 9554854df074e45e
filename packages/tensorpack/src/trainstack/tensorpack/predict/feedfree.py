"""tensorpack 0.11's ``tensorpack.predict.feedfree``: ``FeedfreePredictor``, a predictor fed by an InputSource.

``pred = FeedfreePredictor(config, input_source)``; each ``pred()`` takes the source's next batch and
returns the outputs of ``config.output_names`` on it, as tensorpack's (``imagenet_utils.eval_classification``
calls it ``dataflow.size()`` times over ``StagingInput(QueueInput(dataflow))``). The model is the one
an :class:`OfflinePredictor` of ``config`` builds (its inference tower, the variables restored by
``config.session_init`` and checked); the source is read inside the same traced function, so the
batches never pass through Python. The source's thread or worker processes (a ``QueueInput``'s) start
when the predictor is built and stop at :meth:`close` (also ``with``, or when the predictor is
collected, or at exit): tensorpack left them running.
"""
from __future__ import annotations

import weakref
from typing import Any

import numpy as np
import tensorflow as tf

from trainstack.inputs import FeedfreeInput
from trainstack.loop import Callback, Trainer
from trainstack.towers import OfflinePredictor, PredictConfig

__all__ = ["FeedfreePredictor"]


class FeedfreePredictor:
    """A predictor whose inputs come from ``input_source`` (a feedfree InputSource), not from arrays.

    ``input_source`` is set up with the tower function's input signature (all the model's inputs, as
    tensorpack's), and ``config.input_names`` of them go to the model. ``pred()`` returns a list of
    NumPy arrays, one per ``config.output_names``.
    """

    def __init__(self, config: PredictConfig, input_source: FeedfreeInput) -> None:
        if not isinstance(config, PredictConfig):
            raise TypeError(f"FeedfreePredictor takes a PredictConfig, got {config!r}")
        if config.return_input:
            raise ValueError("return_input is not supported in FeedfreePredictor! If you need to fetch inputs, "
                             "add the names to the output_names!")
        if not isinstance(input_source, FeedfreeInput):
            raise TypeError(f"FeedfreePredictor reads a feedfree InputSource (QueueInput, StagingInput, "
                            f"TFDatasetInput, ...), got {input_source!r}; to predict on arrays use "
                            "OfflinePredictor(config)")
        self._config = config
        self._input_source = input_source
        self._predictor = OfflinePredictor(config)  # builds the tower, restores and checks session_init
        signature = config.tower_func.input_signature
        names = [spec.name for spec in signature]
        missing = [n for n in config.input_names if n not in names]
        if missing:
            raise ValueError(f"FeedfreePredictor: input_names {missing} are not inputs of the model {names}; "
                             "the InputSource gives the model's inputs only")
        callbacks = input_source.setup(signature)
        model = self._predictor.tf_function
        input_names = list(config.input_names)

        def predict() -> list[tf.Tensor]:
            with input_source.tracing():
                values = dict(zip(names, input_source.get_input_tensors(0)))
            return model(*[values[n] for n in input_names])

        self._fn = tf.function(predict, autograph=False)
        self._fn.get_concrete_function()  # traced now: a StagingInput's buffers exist before it is filled
        # the source's callbacks run as in training (its thread and workers start in before_train, in
        # the order the sources registered them), owned by a loop Trainer that never trains
        owner = Trainer()
        for cb in callbacks:
            cb.setup_graph(owner)
        self._finalizer = weakref.finalize(self, _stop, callbacks)
        for cb in callbacks:
            cb.before_train()

    def __call__(self) -> list[np.ndarray]:
        if not self._finalizer.alive:
            raise RuntimeError("FeedfreePredictor: called after close()")
        return [np.asarray(t.numpy()) for t in self._fn()]

    def close(self) -> None:
        """Stop the InputSource's thread and the dataflow's worker processes (idempotent)."""
        self._finalizer()

    def __enter__(self) -> FeedfreePredictor:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"FeedfreePredictor({self._config!r}, {self._input_source!r})"


def _stop(callbacks: list[Callback]) -> None:
    """The end of the source's run: what its callbacks do after training (stop its thread, close the
    dataflow's workers, raise the thread's error)."""
    errors = []
    for cb in callbacks:
        try:
            cb.after_train()
        except Exception as e:  # noqa: BLE001 - every callback stops; the first error is raised after
            errors.append(e)
    if errors:
        raise errors[0]
