"""InputReader: a trainer that only reads an InputSource, as K towers would.

Nothing is trained: each step takes one batch per tower inside a traced
step and returns them. Use it to check an input pipeline without a model
(what arrives, in which order, on which tower) and to measure its speed
(``benchmarks/input_throughput.py``), like tensorpack's ``TestDataSpeed``.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import tensorflow as tf

from trainstack.loop import Trainer

from .base import InputSource

__all__ = ["InputReader"]


class InputReader(Trainer):
    """Reads ``source`` (set up with ``input_signature`` for ``num_towers`` towers).

    ``reduce`` maps one tower's tensors to what the step returns for it
    (default: the tensors themselves); return something small, e.g. a sum,
    to measure throughput without copying batches back to the host. With
    ``keep=True`` each step's per-tower outputs (NumPy) are appended to
    ``self.batches``.
    """

    stop_exceptions = (tf.errors.OutOfRangeError,)

    def __init__(self, source: InputSource, input_signature: Sequence[tf.TensorSpec],
                 num_towers: int = 1, reduce: Callable[[list[tf.Tensor]], Any] | None = None,
                 keep: bool = True) -> None:
        super().__init__()
        if not isinstance(source, InputSource):
            raise TypeError(f"InputReader reads an InputSource, got {source!r} ({type(source).__name__})")
        source.setup(input_signature, num_towers=num_towers)
        self.source = source
        self.keep = keep
        self.batches: list[list[Any]] = []
        reduce = reduce or (lambda tensors: tensors)

        def step(feeds):
            with source.tracing(feeds):
                return [reduce(source.get_input_tensors(k)) for k in range(num_towers)]

        self._compiled = tf.function(step, input_signature=[source.feed_signature()])
        self._compiled.get_concrete_function()  # trace now: a source's state (staging buffers) exists before training
        self.train_op = self

    def run_with_fetches(self, args: tuple, fetches: Sequence[str],
                         feeds: Mapping[str, Any]) -> tuple[Any, Mapping[str, Any]]:
        """The loop's FetchableStep protocol: feeds go in as the step's argument."""
        if fetches:
            raise KeyError(f"InputReader's step has no named values to fetch, asked for {list(fetches)}")
        out = self._compiled(dict(feeds))
        if self.keep:
            self.batches.append(tf.nest.map_structure(lambda t: t.numpy(), out))
        return out, {}

    def read(self, steps_per_epoch: int | None = None, max_epoch: int = 1, callbacks=(),
             monitors=()) -> list[list[Any]]:
        """Run ``max_epoch`` epochs (default: one pass of the source each); return the batches."""
        steps = self.source.size() if steps_per_epoch is None else steps_per_epoch
        self.train([*self.source.get_callbacks(), *callbacks], list(monitors), steps, max_epoch=max_epoch)
        return self.batches
