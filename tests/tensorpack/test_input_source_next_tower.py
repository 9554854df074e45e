"""tensorpack's ``get_input_tensors()`` without an index: the next tower's batch in the trace in
progress. The count lives in this layer's sources (``trainstack.tensorpack.input_source``); the core's
take the tower explicitly."""
from __future__ import annotations

import pytest
import tensorflow as tf

from trainstack import inputs
from trainstack.tensorpack.input_source import (
    BatchQueueInput,
    DummyConstantInput,
    FeedfreeInput,
    FeedInput,
    InputSource,
    QueueInput,
    StagingInput,
    TensorInput,
    TFDatasetInput,
)

SIGNATURE = [tf.TensorSpec([], tf.int64, name="id")]


def _dataset_input():
    return TFDatasetInput(tf.data.Dataset.range(100))


def test_each_call_in_a_trace_is_the_next_tower_and_a_new_trace_starts_at_tower_0():
    source = _dataset_input()
    source.setup(SIGNATURE, num_towers=2)

    @tf.function(autograph=False)
    def step():
        with source.tracing():
            first = source.get_input_tensors()
            second = source.get_input_tensors()
        return first[0], second[0]

    source.reset_state()
    assert [int(t) for t in step()] == [0, 1]
    assert [int(t) for t in step()] == [2, 3]


def test_more_calls_than_towers_is_an_error_naming_the_count():
    source = _dataset_input()
    source.setup(SIGNATURE, num_towers=1)

    @tf.function(autograph=False)
    def step():
        with source.tracing():
            source.get_input_tensors()
            return source.get_input_tensors()  # a second tower, but set up for one

    with pytest.raises(inputs.InputError, match="set up for 1 tower.*called 2 times"):
        step.get_concrete_function()


def test_an_explicit_index_is_the_cores_and_does_not_count():
    source = _dataset_input()
    source.setup(SIGNATURE, num_towers=2)

    @tf.function(autograph=False)
    def step():
        with source.tracing():
            one = source.get_input_tensors(1)
            nxt = source.get_input_tensors()  # tower 0: explicit calls do not advance the count
        return one[0], nxt[0]

    source.reset_state()
    assert [int(t) for t in step()] == [1, 0]


def test_the_layers_sources_are_the_cores_and_tensorpacks_classes():
    for cls, core in [(FeedInput, inputs.FeedInput), (QueueInput, inputs.QueueInput),
                      (BatchQueueInput, inputs.BatchQueueInput), (TensorInput, inputs.TensorInput),
                      (DummyConstantInput, inputs.DummyConstantInput), (TFDatasetInput, inputs.TFDatasetInput),
                      (StagingInput, inputs.StagingInput)]:
        assert issubclass(cls, core) and issubclass(cls, InputSource) and cls is not core, cls
    for cls in (QueueInput, BatchQueueInput, TensorInput, DummyConstantInput, TFDatasetInput, StagingInput):
        assert issubclass(cls, FeedfreeInput) and issubclass(cls, inputs.FeedfreeInput), cls
    assert not issubclass(FeedInput, FeedfreeInput)
