"""FeedInput: batches fed from Python into each hooked run, one datapoint per tower."""
from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from trainstack.inputs import EmptyDataFlowError, FeedInput, InputError, InputReader, InputSignatureError

SIG = [tf.TensorSpec([None, 2], tf.float32, name="x"), tf.TensorSpec([None], tf.int32, name="y")]


def make_data(n: int, batch: int = 3) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(n)
    return [(rng.normal(size=(batch, 2)).astype("float32"), np.full([batch], i, "int32")) for i in range(n)]


def labels(batches) -> list[list[int]]:
    """Per step, per tower: the datapoint index carried in the labels."""
    return [[int(tower[1][0]) for tower in step] for step in batches]


class CountingFlow:
    """A dataflow over ``data`` that counts its passes and reset_state calls."""

    def __init__(self, data) -> None:
        self.data, self.passes, self.resets = data, 0, 0

    def __len__(self) -> int:
        return len(self.data)

    def __iter__(self):
        self.passes += 1
        return iter(self.data)

    def reset_state(self) -> None:
        self.resets += 1


def test_values_intact_in_order_and_each_epoch_is_one_pass():
    data = make_data(5)
    flow = CountingFlow(data)
    source = FeedInput(flow)
    reader = InputReader(source, SIG)
    assert source.size() == 5
    batches = reader.read(max_epoch=3)  # default steps_per_epoch: one pass
    assert labels(batches) == [[i] for i in range(5)] * 3
    for step, (x, y) in zip(batches, data * 3):
        np.testing.assert_array_equal(step[0][0], x)
        np.testing.assert_array_equal(step[0][1], y)
    assert flow.resets == 1
    assert reader.global_step == 15


def test_two_towers_get_distinct_batches():
    source = FeedInput(make_data(6))
    batches = InputReader(source, SIG, num_towers=2).read(steps_per_epoch=3, max_epoch=2)
    seen = labels(batches)
    assert all(t0 != t1 for t0, t1 in seen)
    assert sorted(i for step in seen[:3] for i in step) == list(range(6))  # each once per pass
    assert seen == [[0, 1], [2, 3], [4, 5]] * 2


def test_dict_datapoints_are_arranged_in_signature_order():
    data = [{"y": np.full([2], i, "int32"), "x": np.full([2, 2], i, "float32")} for i in range(3)]
    batches = InputReader(FeedInput(data), SIG).read()
    assert labels(batches) == [[0], [1], [2]]
    np.testing.assert_array_equal(batches[2][0][0], np.full([2, 2], 2, "float32"))


def test_float64_is_converted_to_the_spec_dtype():
    data = [(np.ones([2, 2]), np.zeros([2], "int64"))]  # float64 and int64: same-kind casts
    batches = InputReader(FeedInput(data), SIG).read()
    assert batches[0][0][0].dtype == np.float32 and batches[0][0][1].dtype == np.int32


@pytest.mark.parametrize("bad, match", [
    ((np.ones([2, 2], "float32"), np.full([2], np.nan, "float32")), r"'y' expects dtype int32.*float32.*NaN"),
    ((np.ones([2, 3], "float32"), np.ones([2], "int32")), r"'x' expects .*shape \(None, 2\).*\(2, 3\)"),
    ((np.ones([2, 2], "float32"),), r"1 components.*expects 2"),
    ({"x": np.ones([2, 2], "float32")}, r"missing \['y'\]"),
    ({"x": np.ones([2, 2], "float32"), "y": np.ones([2], "int32"), "z": 1}, r"unexpected \['z'\]"),
    (np.ones([2, 2], "float32"), r"must be a list, tuple or dict"),
])
def test_bad_datapoints_raise_a_clear_signature_error(bad, match):
    data = [(np.ones([2, 2], "float32"), np.ones([2], "int32")), bad]
    reader = InputReader(FeedInput(data), SIG)
    with pytest.raises(InputSignatureError, match=match) as info:
        reader.read()
    assert "FeedInput" in str(info.value)
    assert reader.global_step == 1  # the good datapoint was read, then training failed


def test_empty_dataflow():
    with pytest.raises(EmptyDataFlowError, match="size 0"):
        FeedInput([]).size()
    # without __len__, the empty pass itself is detected instead of looping forever
    reader = InputReader(FeedInput(iter_only(CountingFlow([]))), SIG)
    with pytest.raises(EmptyDataFlowError, match="no datapoint in a whole pass"):
        reader.read(steps_per_epoch=3)


def iter_only(flow):
    """A dataflow without __len__ that iterates ``flow``."""
    class IterOnly:
        def __iter__(self):
            return iter(flow)
    return IterOnly()


def test_dataflow_shorter_than_an_epoch_is_reiterated():
    flow = CountingFlow(make_data(3))
    batches = InputReader(FeedInput(flow), SIG).read(steps_per_epoch=7, max_epoch=2)
    assert labels(batches) == [[i % 3] for i in range(14)]
    assert flow.passes == 5 and flow.resets == 1


def test_size_without_len_is_a_clear_error():
    with pytest.raises(InputError, match="no __len__.*steps_per_epoch"):
        FeedInput(iter_only(CountingFlow(make_data(2)))).size()
