"""BatchQueueInput: a thread enqueues single examples; each tower dequeues a whole batch.

For dataflows that yield one example at a time (no batch dimension): the
batch is formed in the graph by ``dequeue_many(batch_size)``, so Python never
stacks arrays. Batches are cut from the stream of examples: when the dataflow's
length is not a multiple of ``batch_size``, a batch may span two passes.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import tensorflow as tf

from trainstack.loop.checks import check_int

from .dataflow import dataflow_size
from .errors import InputError, InputSignatureError
from .queue import QueueInput
from .signature import check_datapoint_at

__all__ = ["BatchQueueInput"]


class BatchQueueInput(QueueInput):
    """Enqueue single examples of ``dataflow`` into a queue; each tower dequeues ``batch_size``.

    The input signature keeps its leading batch dimension (``[None, 28, 28]``
    or ``[batch_size, 28, 28]``); each datapoint of the dataflow is one example,
    checked against the signature without that dimension, whose other
    dimensions must be fully defined (``dequeue_many`` needs fixed shapes).
    ``queue_size`` counts examples; by default the queue holds four steps of
    every tower (``4 * batch_size * num_towers``). ``size()`` is
    ``len(dataflow) // batch_size`` batches. The queue's mean fill (in
    examples) goes to the monitors as ``BatchQueueInput/queue_size``.
    """

    def __init__(self, dataflow: Any, batch_size: int, queue_size: int | None = None) -> None:
        batch_size = check_int("BatchQueueInput", "batch_size", batch_size, minimum=1)
        super().__init__(dataflow, queue_size=1 if queue_size is None else queue_size)
        self.batch_size = batch_size
        self._requested_queue_size = queue_size
        self.example_signature: tuple[tf.TensorSpec, ...] | None = None

    def _setup(self, signature: tuple[tf.TensorSpec, ...]) -> None:
        examples = []
        for spec in signature:
            if spec.shape.rank is None or spec.shape.rank == 0:
                raise InputSignatureError(
                    f"{self.name}: input '{spec.name}' has shape {spec.shape}; its spec needs a "
                    "leading batch dimension (e.g. [None, 28, 28]) because the queue forms batches")
            batch_dim = spec.shape[0]
            if batch_dim is not None and batch_dim != self.batch_size:
                raise InputSignatureError(
                    f"{self.name}: input '{spec.name}' has a fixed batch dimension of {batch_dim} "
                    f"(shape {spec.shape}) but batch_size is {self.batch_size}; make them equal or "
                    "leave the batch dimension None")
            example_shape = spec.shape[1:]
            if not example_shape.is_fully_defined():
                raise InputSignatureError(
                    f"{self.name}: input '{spec.name}' has shape {spec.shape}; every dimension but "
                    "the batch dimension must be known, since dequeue_many needs fixed example shapes")
            examples.append(tf.TensorSpec(example_shape, spec.dtype, name=spec.name))
        self.example_signature = tuple(examples)
        if self._requested_queue_size is None:
            self.queue_size = 4 * self.batch_size * self.num_towers
        self.queue = tf.queue.FIFOQueue(self.queue_size, [s.dtype for s in examples],
                                        shapes=[s.shape for s in examples], name=f"{self.name}_queue")

    def _size(self) -> int:
        examples = dataflow_size(self.dataflow, f"{self.name}'s dataflow")
        if examples < self.batch_size:
            raise InputError(
                f"{self.name}'s dataflow has {examples} examples, fewer than one batch of "
                f"{self.batch_size}, so a pass is not even one step; pass steps_per_epoch")
        return examples // self.batch_size

    def _get_input_tensors(self, tower_index: int) -> list[tf.Tensor]:
        tensors = self.queue.dequeue_many(self.batch_size, name=f"{self.name}_dequeue_tower{tower_index}")
        tensors = [tensors] if isinstance(tensors, tf.Tensor) else list(tensors)
        assert self.example_signature is not None, "set by _setup"
        for t, spec in zip(tensors, self.example_signature):
            t.set_shape([self.batch_size, *spec.shape])
        return tensors

    def datapoints(self) -> Iterator[Sequence[Any]]:
        """What the thread enqueues: single examples, checked against the signature without
        its batch dimension, pass after pass."""
        assert self.example_signature is not None, "set by _setup"
        for pass_num, index, dp in self._stream():
            yield check_datapoint_at(pass_num, index, dp, self.example_signature,
                                     source=f"{self.name} (one example)")

    def _datapoints_per_step(self) -> int:
        return self.num_towers * self.batch_size
