"""``get_input_tensors(k)`` is tower ``k``'s batch: for every InputSource, two towers on two logical
CPUs get distinct batches, the same ones whatever the order the towers ask in, and a wrong index is an
error. The hidden counter the sources once kept ("the next tower's") is gone from the core."""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from trainstack.inputs import (
    DummyConstantInput,
    FeedInput,
    MultiProcessInput,
    QueueInput,
    RemoteInput,
    StagingInput,
    TensorInput,
    TFDatasetInput,
)
from trainstack.loop.checks import ArgumentError

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)
import mp_dataflows  # noqa: E402
from test_remote import KEY, ServerThread  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SIGNATURE = [tf.TensorSpec([], tf.int64, name="id"), tf.TensorSpec([2, 2], tf.float32, name="image")]
STEPS = 3


def _dataset(n: int) -> tf.data.Dataset:
    return tf.data.Dataset.range(n).map(lambda i: (i, tf.fill([2, 2], tf.cast(i, tf.float32))))


def _counter_input() -> TensorInput:
    """A stateful TensorInput: each call of its function reads the next id of a counter."""
    counter = tf.Variable(-1, dtype=tf.int64, trainable=False)

    def next_id():
        i = counter.assign_add(1)
        return [i, tf.fill([2, 2], tf.cast(i, tf.float32))]

    return TensorInput(next_id, size=100)


STREAMS = {
    "queue": lambda: QueueInput(mp_dataflows.IdFlow(100)),
    "tf.data": lambda: TFDatasetInput(_dataset(100)),
    "tensor": _counter_input,
    "staging(queue)": lambda: StagingInput(QueueInput(mp_dataflows.IdFlow(100))),
    "staging(tf.data)": lambda: StagingInput(TFDatasetInput(_dataset(100)), nr_stage=2),
    "multi-process": lambda: MultiProcessInput(mp_dataflows.IdFlow(100), num_workers=1),
}


def _read(source, order, steps=STEPS, feeds=None):
    """The ids each tower got in ``steps`` steps of a step function asking for the towers in
    ``order``, each on its own logical CPU."""
    if not source.is_setup:
        source.setup(SIGNATURE, num_towers=2)

    @tf.function(input_signature=[source.feed_signature()], autograph=False)
    def step(feeds):
        got = {}
        with source.tracing(feeds):
            for k in order:
                with tf.device(f"/cpu:{k}"):
                    got[k] = source.get_input_tensors(k)
        return [got[0], got[1]]

    step.get_concrete_function()
    for s in (getattr(source, "input", None), source):  # what the sources' callbacks do before training
        if s is not None:
            s.reset_state()
    try:
        return [[[int(t[0]), float(t[1][0, 0])] for t in step(feeds or {})] for _ in range(steps)]
    finally:
        for s in (source, getattr(source, "input", None)):
            if hasattr(s, "stop"):
                s.stop()


def _cpus():
    if len(tf.config.list_logical_devices("CPU")) < 2:
        pytest.skip("needs two logical CPU devices (set up by conftest before TensorFlow initializes)")


@pytest.mark.parametrize("kind", list(STREAMS))
def test_each_tower_gets_its_batch_in_any_order_of_the_calls(kind):
    _cpus()
    expected = [[[2 * s, 2.0 * s], [2 * s + 1, 2.0 * s + 1]] for s in range(STEPS)]
    assert _read(STREAMS[kind](), order=(0, 1)) == expected
    assert _read(STREAMS[kind](), order=(1, 0)) == expected


def test_a_remote_input_gives_each_tower_its_batch_in_any_order():
    _cpus()
    expected = [[[2 * s, 2.0 * s], [2 * s + 1, 2.0 * s + 1]] for s in range(STEPS)]
    for order in ((0, 1), (1, 0)):
        server = ServerThread(mp_dataflows.IdFlow(100))
        try:
            assert _read(RemoteInput(server.address, KEY, size=100), order=order) == expected
        finally:
            server.join()


def test_a_feed_input_gives_each_tower_its_feeds():
    _cpus()
    feeds = {"tower0/id": tf.constant(7, tf.int64), "tower0/image": tf.fill([2, 2], 7.0),
             "tower1/id": tf.constant(8, tf.int64), "tower1/image": tf.fill([2, 2], 8.0)}
    for order in ((0, 1), (1, 0)):
        source = FeedInput([[np.int64(0), np.zeros([2, 2], np.float32)]])
        source.setup(SIGNATURE, num_towers=2)
        assert _read(source, order, steps=1, feeds=feeds) == [[[7, 7.0], [8, 8.0]]]


def test_dummy_constants_are_each_towers_own():
    _cpus()
    shapes = [[], [2, 2]]
    for order in ((0, 1), (1, 0)):
        source = DummyConstantInput(shapes, seed=3)
        source.setup(SIGNATURE, num_towers=2)
        got = _read(source, order, steps=1)[0]
        assert got[0][1] == pytest.approx(float(source._values[0][1][0, 0]))
        assert got[1][1] == pytest.approx(float(source._values[1][1][0, 0]))
        assert got[0][1] != got[1][1]


def test_the_same_tower_twice_in_a_trace_is_the_same_batch():
    source = TFDatasetInput(_dataset(10))
    source.setup(SIGNATURE, num_towers=2)

    @tf.function(autograph=False)
    def step():
        with source.tracing():
            a = source.get_input_tensors(1)
            b = source.get_input_tensors(1)
            c = source.get_input_tensors(0)
        return a[0], b[0], c[0]

    source.reset_state()
    assert [int(t) for t in step()] == [1, 1, 0]
    assert [int(t) for t in step()] == [3, 3, 2]


@pytest.mark.parametrize("index", [-1, 2, 1.0, True, None, "0"])
def test_a_wrong_tower_index_is_an_error_naming_the_towers(index):
    source = TensorInput(lambda: [tf.zeros([], tf.int64), tf.zeros([2, 2])])
    source.setup(SIGNATURE, num_towers=2)
    with source.tracing(), pytest.raises(ArgumentError, match=r"get_input_tensors\(tower_index=\.\.\.\) must be an "
                                                                r"integer in \[0, 1\].*set up for 2 tower"):
        source.get_input_tensors(index)


def test_the_core_keeps_no_hidden_tower_counter():
    """No core layer calls get_input_tensors() without the tower, nor keeps a count of the calls:
    the count of tensorpack's form lives in the tensorpack layer only."""
    offenders = []
    for package in ("inputs", "towers", "distributed"):
        for path in (ROOT / "packages" / package / "src").rglob("*.py"):
            text = path.read_text()
            if re.search(r"get_input_tensors\(\)(?!`? must)", text.replace("_get_input_tensors()", "")) \
                    or "_tower_index" in text or "_next_tower" in text:
                offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []
