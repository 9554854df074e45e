"""QueueInput: a thread fills a TF queue; each tower dequeues its own batch inside the step."""
from __future__ import annotations

import threading

import numpy as np
import pytest
import tensorflow as tf

from trainstack.inputs import InputReader, InputSignatureError, QueueInput
from trainstack.loop import MonitorBase

SIG = [tf.TensorSpec([None, 2], tf.float32, name="x"), tf.TensorSpec([None], tf.int64, name="y")]


def make_data(n: int, batch: int = 2) -> list[tuple[np.ndarray, np.ndarray]]:
    return [(np.full([batch, 2], i + 0.5, "float32"), np.full([batch], i, "int64")) for i in range(n)]


def labels(batches) -> list[list[int]]:
    return [[int(tower[1][0]) for tower in step] for step in batches]


class ScalarRecorder(MonitorBase):
    """Records every scalar put to the monitors."""

    def __init__(self) -> None:
        self.scalars: list[tuple[str, float, int]] = []

    def process_scalar(self, name, value):
        self.scalars.append((name, value, self.global_step))


def enqueue_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.endswith("-enqueue") and t.is_alive()]


def test_values_in_order_over_three_epochs_each_one_pass(run_with_deadline):
    data = make_data(4)
    source = QueueInput(data, queue_size=3)
    reader = InputReader(source, SIG)
    assert source.size() == 4
    batches = run_with_deadline(lambda: reader.read(max_epoch=3))
    assert labels(batches) == [[0], [1], [2], [3]] * 3
    for step, (x, _) in zip(batches, data * 3):
        np.testing.assert_array_equal(step[0][0], x)


def test_two_towers_get_distinct_batches(run_with_deadline):
    source = QueueInput(make_data(6))
    batches = run_with_deadline(lambda: InputReader(source, SIG, num_towers=2).read(steps_per_epoch=3,
                                                                                    max_epoch=2))
    seen = labels(batches)
    assert all(t0 != t1 for t0, t1 in seen)
    assert seen == [[0, 1], [2, 3], [4, 5]] * 2


def test_queue_size_is_reported_to_the_monitors_each_epoch(run_with_deadline):
    recorder = ScalarRecorder()
    # a queue much smaller than an epoch: the thread must enqueue during every epoch
    source = QueueInput(make_data(6), queue_size=2)
    reader = InputReader(source, SIG)
    run_with_deadline(lambda: reader.read(max_epoch=2, monitors=[recorder]))
    reported = [(v, step) for name, v, step in recorder.scalars if name == "QueueInput/queue_size"]
    assert [step for _, step in reported] == [6, 12]
    assert all(0 <= v <= 2 for v, _ in reported)
    assert reader.monitors.get_history("QueueInput/queue_size") == [v for v, _ in reported]


def test_a_bad_datapoint_in_the_thread_stops_training_with_a_signature_error(run_with_deadline):
    data = make_data(5)
    data[3] = (data[3][0], np.full([2], np.inf, "float32"))  # infinite labels: no int64 value
    source = QueueInput(data, queue_size=2)
    reader = InputReader(source, SIG)
    with pytest.raises(InputSignatureError, match=r"QueueInput: input 'y' expects dtype int64") as info:
        run_with_deadline(lambda: reader.read(steps_per_epoch=10))
    assert "float32" in str(info.value)
    assert reader.global_step == 3  # the three good datapoints were trained on, then it stopped
    assert not enqueue_threads()


def test_a_wrong_shape_from_the_thread_is_named_too(run_with_deadline):
    data = make_data(3)
    data[1] = (np.ones([2, 5], "float32"), data[1][1])
    reader = InputReader(QueueInput(data), SIG)
    with pytest.raises(InputSignatureError, match=r"'x' expects dtype float32 and shape \(None, 2\)"):
        run_with_deadline(lambda: reader.read(steps_per_epoch=4))


def test_the_enqueue_thread_is_gone_after_training(run_with_deadline):
    source = QueueInput(make_data(3), queue_size=2)
    run_with_deadline(lambda: InputReader(source, SIG).read(max_epoch=2))
    assert source._thread is None
    assert not enqueue_threads()


def test_dataflow_shorter_than_an_epoch_is_reiterated(run_with_deadline):
    batches = run_with_deadline(lambda: InputReader(QueueInput(make_data(2)), SIG).read(steps_per_epoch=5))
    assert labels(batches) == [[0], [1], [0], [1], [0]]


def test_queue_size_must_be_positive():
    with pytest.raises(ValueError, match="queue_size"):
        QueueInput(make_data(2), queue_size=0)
