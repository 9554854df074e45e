"""BatchQueueInput: single examples in, batches of batch_size out (dequeue_many per tower)."""
from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from trainstack.inputs import BatchQueueInput, InputError, InputSignatureError
from trainstack.loop import MonitorBase

SIG = [tf.TensorSpec([None, 3], tf.float32, name="x"), tf.TensorSpec([None], tf.int32, name="y")]


def examples(n: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Example i: x = [i, i+0.25, i+0.5], y = i (no batch dimension)."""
    return [(np.array([i, i + 0.25, i + 0.5], "float32"), np.int32(i)) for i in range(n)]


def label_batches(batches) -> list[list[list[int]]]:
    return [[tower[1].tolist() for tower in step] for step in batches]


def test_examples_are_batched_intact_in_order_one_pass_per_epoch(read_input):
    source = BatchQueueInput(examples(12), batch_size=4)
    assert source.size() == 3
    reader, batches = read_input(source, SIG, max_epoch=3)
    assert label_batches(batches) == [[[0, 1, 2, 3]], [[4, 5, 6, 7]], [[8, 9, 10, 11]]] * 3
    np.testing.assert_array_equal(batches[1][0][0], np.stack([x for x, _ in examples(12)[4:8]]))
    assert batches[0][0][0].shape == (4, 3)
    assert reader.global_step == 9


def test_two_towers_each_dequeue_their_own_batch(read_input):
    _, batches = read_input(BatchQueueInput(examples(12), batch_size=3), SIG, towers=2, steps_per_epoch=2,
                              max_epoch=2)
    assert label_batches(batches) == [[[0, 1, 2], [3, 4, 5]], [[6, 7, 8], [9, 10, 11]]] * 2


def test_batches_span_passes_when_the_length_is_not_a_multiple(read_input):
    source = BatchQueueInput(examples(10), batch_size=4)
    assert source.size() == 2
    _, batches = read_input(source, SIG, steps_per_epoch=3)
    assert label_batches(batches) == [[[0, 1, 2, 3]], [[4, 5, 6, 7]], [[8, 9, 0, 1]]]


def test_a_fixed_batch_dimension_must_equal_batch_size():
    fixed = [tf.TensorSpec([4, 3], tf.float32, name="x"), tf.TensorSpec([4], tf.int32, name="y")]
    with pytest.raises(InputSignatureError, match=r"'x' has a fixed batch dimension of 4.*batch_size is 2"):
        BatchQueueInput(examples(8), batch_size=2).setup(fixed)
    source = BatchQueueInput(examples(8), batch_size=4)
    source.setup(fixed)
    shapes = []

    def step():
        with source.tracing():
            tensors = source.get_input_tensors(0)
        shapes.extend(t.shape.as_list() for t in tensors)
        return tensors

    tf.function(step).get_concrete_function()  # trace only: no thread runs, nothing is dequeued
    assert shapes == [[4, 3], [4]]


@pytest.mark.parametrize("spec, match", [
    (tf.TensorSpec([], tf.float32, name="x"), "needs a leading batch dimension"),
    (tf.TensorSpec([None, None], tf.float32, name="x"), "every dimension but the batch dimension"),
])
def test_specs_the_queue_cannot_batch_are_refused(spec, match):
    with pytest.raises(InputSignatureError, match=match):
        BatchQueueInput(examples(4), batch_size=2).setup([spec, SIG[1]])


def test_a_batched_datapoint_is_refused_as_an_example(read_input):
    data = examples(6)
    data[2] = (np.ones([2, 3], "float32"), np.int32(2))  # an already batched x
    with pytest.raises(InputSignatureError, match=r"\(one example\): input 'x' expects .*shape \(3,\)"):
        read_input(BatchQueueInput(data, batch_size=2), SIG, steps_per_epoch=3)


def test_fewer_examples_than_a_batch_has_no_size():
    with pytest.raises(InputError, match="fewer than one batch of 4"):
        BatchQueueInput(examples(3), batch_size=4).size()


def test_queue_size_defaults_to_four_steps_of_every_tower():
    source = BatchQueueInput(examples(8), batch_size=2)
    source.setup(SIG, num_towers=3)
    assert source.queue_size == 4 * 2 * 3
    assert source.queue.size().numpy() == 0


def test_queue_fill_is_reported_each_epoch(read_input):
    class Recorder(MonitorBase):
        def __init__(self):
            self.values = []

        def process_scalar(self, name, value):
            if name == "BatchQueueInput/queue_size":
                self.values.append((self.global_step, value))

    recorder = Recorder()
    # a queue smaller than an epoch: the thread must enqueue during every epoch
    read_input(BatchQueueInput(examples(8), batch_size=2, queue_size=2), SIG, max_epoch=2, monitors=[recorder])
    assert [step for step, _ in recorder.values] == [4, 8]
    assert all(0 <= v <= 2 for _, v in recorder.values)


@pytest.mark.parametrize("batch_size", [0, -1, 2.0, True])
def test_batch_size_must_be_a_positive_int(batch_size):
    with pytest.raises(ValueError, match="batch_size"):
        BatchQueueInput(examples(4), batch_size=batch_size)
