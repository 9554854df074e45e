"""StagingInput: batches staged in per-tower device buffers, one step ahead."""
from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from trainstack.inputs import FeedInput, QueueInput, StagingInput, TensorInput, TFDatasetInput
from trainstack.loop import MonitorBase

SIG = [tf.TensorSpec([None, 2], tf.float32, name="x"), tf.TensorSpec([None], tf.int64, name="y")]


def make_data(n: int) -> list[tuple[np.ndarray, np.ndarray]]:
    return [(np.full([2, 2], i + 0.5, "float32"), np.array([i, i], "int64")) for i in range(n)]


def labels(batches) -> list[list[int]]:
    return [[int(tower[1][0]) for tower in step] for step in batches]


class Recorder(MonitorBase):
    def __init__(self):
        self.names = []

    def process_scalar(self, name, value):
        self.names.append(name)


@pytest.mark.parametrize("nr_stage", [1, 2])
def test_batches_intact_in_order_each_epoch_one_pass(nr_stage, read_input):
    data = make_data(5)
    inner = QueueInput(data, queue_size=2)
    source = StagingInput(inner, nr_stage=nr_stage)
    recorder = Recorder()
    reader, batches = read_input(source, SIG, max_epoch=3, monitors=[recorder])
    assert source.size() == 5
    assert labels(batches) == [[i] for i in range(5)] * 3
    for step, (x, _) in zip(batches, data * 3):
        np.testing.assert_array_equal(step[0][0], x)
    # the wrapped source's callbacks ran: its queue stat was reported, its thread was stopped
    assert recorder.names.count("QueueInput/queue_size") == 3
    assert inner._thread is None
    assert len(source.buffers[0]) == nr_stage  # one set of buffers, although the step traced twice


@pytest.mark.parametrize("nr_stage", [1, 2])
@pytest.mark.parametrize("towers", [2, 4])
def test_towers_get_the_wrapped_sources_batches_in_its_order(read_input, towers, nr_stage):
    # step s trains tower k on batch s*K + k, as without staging, from the first step on
    inner = TFDatasetInput(tf.data.Dataset.from_tensor_slices(
        (np.repeat(np.arange(8, dtype="float32")[:, None, None], 2, 2), np.arange(8)[:, None])).batch(1).unbatch())
    source = StagingInput(inner, nr_stage=nr_stage)
    steps = 8 // towers
    _, batches = read_input(source, SIG, towers=towers, steps_per_epoch=steps, max_epoch=2)
    expected = [[s * towers + k for k in range(towers)] for s in range(steps)]
    assert labels(batches) == expected * 2


def test_order_with_three_stages_on_a_dataset(read_input):
    ds = tf.data.Dataset.from_tensor_slices(
        (np.zeros([6, 1, 2], "float32"), np.arange(6)[:, None]))
    _, batches = read_input(StagingInput(TFDatasetInput(ds), nr_stage=3), SIG, steps_per_epoch=6, max_epoch=2)
    assert labels(batches) == [[i] for i in range(6)] * 2


def test_buffers_are_reused_by_a_later_trace_and_nothing_is_lost(read_input):
    ds = tf.data.Dataset.from_tensor_slices((np.zeros([6, 1, 2], "float32"), np.arange(6)[:, None]))
    source = StagingInput(TFDatasetInput(ds))
    _, batches = read_input(source, SIG, steps_per_epoch=2)
    assert labels(batches) == [[0], [1]]
    buffers = source.buffers[0]

    @tf.function
    def another_step():
        with source.tracing():
            return source.get_input_tensors(0)

    # another step function: the batch staged during the last step (2) comes first, none is skipped
    assert [int(another_step()[1][0]) for _ in range(3)] == [2, 3, 4]
    assert source.buffers[0] is buffers


def test_buffers_live_on_the_tower_device_or_the_given_one():
    if len(tf.config.list_logical_devices("CPU")) < 2:
        pytest.skip("needs two logical CPU devices (set up by conftest before TensorFlow initializes)")
    traced = StagingInput(TensorInput(lambda: [tf.ones([1, 2]), tf.zeros([1], tf.int64)]))
    given = StagingInput(TensorInput(lambda: [tf.ones([1, 2]), tf.zeros([1], tf.int64)]), device="/cpu:1")
    for s in (traced, given):
        s.setup(SIG, num_towers=2)

    @tf.function
    def step():
        outs = []
        for s in (traced, given):
            with s.tracing():
                for k in range(2):
                    with tf.device(f"/cpu:{k}"):
                        outs.append(s.get_input_tensors(k))
        return outs

    step.get_concrete_function()  # the buffers exist once the step is traced ...
    for s in (traced, given):
        s.reset_state()  # ... and are filled before training (the source's callback does it)
    out = step()
    assert [v.device.endswith("CPU:0") for v in traced.buffers[0][0]] == [True, True]
    assert [v.device.endswith("CPU:1") for v in traced.buffers[1][0]] == [True, True]
    assert all(v.device.endswith("CPU:1") for k in (0, 1) for v in given.buffers[k][0])
    assert out[0][0].numpy().tolist() == [[1.0, 1.0]]


def test_wraps_feedfree_inputs_only():
    with pytest.raises(TypeError, match="FeedfreeInput.*FeedInput"):
        StagingInput(FeedInput(make_data(2)))
    with pytest.raises(TypeError, match="cannot wrap another StagingInput"):
        StagingInput(StagingInput(QueueInput(make_data(2))))
    with pytest.raises(ValueError, match="nr_stage"):
        StagingInput(QueueInput(make_data(2)), nr_stage=0)


@pytest.mark.gpu
@pytest.mark.skipif(not tf.config.list_physical_devices("GPU"), reason="needs a GPU")
def test_staged_batches_live_on_the_gpu():
    source = StagingInput(QueueInput(make_data(4)))
    source.setup(SIG)
    for cb in source.get_callbacks():  # what a trainer does before training: starts the thread
        if cb.overrides("before_train"):
            cb.before_train()

    @tf.function
    def step():
        with source.tracing(), tf.device("/gpu:0"):
            x, y = source.get_input_tensors(0)
            return x * 2.0, y

    try:
        outs = [step() for _ in range(3)]
    finally:
        source.input.stop()
    assert all("GPU" in v.device for stage in source.buffers[0] for v in stage)
    assert all("GPU" in x.device for x, _ in outs)
    assert [int(y[0]) for _, y in outs] == [0, 1, 2]
    np.testing.assert_allclose(outs[1][0].numpy(), np.full([2, 2], 3.0))
