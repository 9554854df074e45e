"""TFDatasetInput: a tf.data iterator consumed inside the traced step; dataflow_to_dataset."""
from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from trainstack.inputs import (
    EmptyDataFlowError,
    InputError,
    InputReader,
    InputSignatureError,
    TFDatasetInput,
    dataflow_to_dataset,
)

SIG = [tf.TensorSpec([None, 2], tf.float32, name="x"), tf.TensorSpec([None], tf.int64, name="y")]


def batched(n: int, batch: int = 2) -> tf.data.Dataset:
    """n batches; batch i holds labels i*batch .. i*batch+batch-1 and x = label + 0.5."""
    y = np.arange(n * batch, dtype="int64")
    x = np.repeat((y + 0.5).astype("float32")[:, None], 2, axis=1)
    return tf.data.Dataset.from_tensor_slices((x, y)).batch(batch)


def labels(batches) -> list[list[list[int]]]:
    return [[tower[1].tolist() for tower in step] for step in batches]


def test_values_in_order_each_epoch_is_one_pass():
    source = TFDatasetInput(batched(3))
    reader = InputReader(source, SIG)
    assert source.size() == 3
    batches = reader.read(max_epoch=3)
    assert labels(batches) == [[[0, 1]], [[2, 3]], [[4, 5]]] * 3
    np.testing.assert_array_equal(batches[2][0][0], [[4.5, 4.5], [5.5, 5.5]])


def test_two_towers_take_distinct_elements():
    batches = InputReader(TFDatasetInput(batched(4)), SIG, num_towers=2).read(steps_per_epoch=2, max_epoch=2)
    assert labels(batches) == [[[0, 1], [2, 3]], [[4, 5], [6, 7]]] * 2


def test_dict_and_single_tensor_elements():
    ds = batched(2).map(lambda x, y: {"y": y, "x": x})
    assert labels(InputReader(TFDatasetInput(ds), SIG).read()) == [[[0, 1]], [[2, 3]]]
    single = [tf.TensorSpec([None], tf.int64, name="y")]
    out = InputReader(TFDatasetInput(tf.data.Dataset.range(6).batch(3)), single).read()
    assert [step[0][0].tolist() for step in out] == [[0, 1, 2], [3, 4, 5]]


@pytest.mark.parametrize("dataset, match", [
    (batched(2).map(lambda x, y: (x, tf.cast(y, tf.int32))), r"'y' expects dtype int64.*gives dtype int32"),
    (batched(2).map(lambda x, y: (tf.concat([x, x], 1), y)), r"'x' expects .*\(None, 2\).*gives shape \(None, 4\)"),
    (batched(2).map(lambda x, y: (x, y, y)), r"3 components.*expects 2"),
    (batched(2).map(lambda x, y: {"x": x, "label": y}), r"missing \['y'\], unexpected \['label'\]"),
    (batched(2).map(lambda x, y: x), r"single TensorSpec.*expects 2 inputs"),
    (tf.data.Dataset.from_tensors((tf.ragged.constant([[1.0, 2.0], [3.0]]), tf.constant([1, 2], tf.int64))),
     r"'x' expects a dense tensor.*RaggedTensorSpec"),
])
def test_element_spec_must_match_the_signature_at_setup(dataset, match):
    with pytest.raises(InputSignatureError, match=match):
        TFDatasetInput(dataset).setup(SIG)


def test_a_fixed_batch_size_in_the_spec_is_checked_per_step():
    fixed = [tf.TensorSpec([2, 2], tf.float32, name="x"), tf.TensorSpec([2], tf.int64, name="y")]
    # 5 examples in batches of 2: the last batch has one example
    ds = tf.data.Dataset.from_tensor_slices((np.zeros([5, 2], "float32"), np.arange(5))).batch(2)
    reader = InputReader(TFDatasetInput(ds), fixed)
    with pytest.raises(tf.errors.InvalidArgumentError, match="[Ss]hape"):
        reader.read()
    assert reader.global_step == 2


def test_infinite_and_unknown_sizes_are_clear_errors():
    with pytest.raises(InputError, match="infinite.*steps_per_epoch"):
        TFDatasetInput(batched(2).repeat()).size()
    with pytest.raises(InputError, match="assert_cardinality"):
        TFDatasetInput(batched(2).filter(lambda x, y: True)).size()
    # with steps_per_epoch, an infinite dataset is fine
    out = InputReader(TFDatasetInput(batched(2).repeat()), SIG).read(steps_per_epoch=3)
    assert labels(out) == [[[0, 1]], [[2, 3]], [[0, 1]]]


def test_empty_datasets():
    with pytest.raises(EmptyDataFlowError, match="no element"):
        TFDatasetInput(batched(2).take(0)).setup(SIG)
    # unknown cardinality, empty in fact: the step fails, naming the input, instead of ending quietly
    reader = InputReader(TFDatasetInput(batched(2).filter(lambda x, y: False)), SIG)
    with pytest.raises(tf.errors.InvalidArgumentError, match="TFDatasetInput: the dataset yielded no element"):
        reader.read(steps_per_epoch=2)


def test_dataset_shorter_than_an_epoch_is_repeated():
    out = InputReader(TFDatasetInput(batched(2)), SIG).read(steps_per_epoch=5)
    assert labels(out) == [[[0, 1]], [[2, 3]], [[0, 1]], [[2, 3]], [[0, 1]]]


class Flow:
    """A dataflow of n batches with reset_state counting."""

    def __init__(self, n: int) -> None:
        self.n, self.resets = n, 0

    def __len__(self) -> int:
        return self.n

    def __iter__(self):
        for i in range(self.n):
            yield [np.full([2, 2], i, "float64"), np.array([i, i])]

    def reset_state(self) -> None:
        self.resets += 1


def test_dataflow_to_dataset_checks_and_sizes():
    flow = Flow(3)
    ds = dataflow_to_dataset(flow, SIG)
    assert int(ds.cardinality()) == 3
    assert ds.element_spec == (tf.TensorSpec([None, 2], tf.float32, name="x"),
                               tf.TensorSpec([None], tf.int64, name="y"))
    first = [y.numpy().tolist() for _, y in ds]
    second = [y.numpy().tolist() for _, y in ds]
    assert first == second == [[0, 0], [1, 1], [2, 2]]
    assert flow.resets == 1


def test_tfdatasetinput_takes_a_dataflow():
    source = TFDatasetInput(Flow(2))
    assert source.size() == 2
    out = InputReader(source, SIG, num_towers=2).read(steps_per_epoch=2)
    assert labels(out) == [[[0, 0], [1, 1]], [[0, 0], [1, 1]]]


def test_a_bad_datapoint_through_dataflow_to_dataset_names_the_input():
    nan_labels = np.full([2], np.nan, "float32")  # NaN has no int64 value (a float label would be converted)
    data = [[np.ones([2, 2], "float32"), np.array([1, 2])], [np.ones([2, 2], "float32"), nan_labels]]
    reader = InputReader(TFDatasetInput(data), SIG)
    with pytest.raises(tf.errors.OpError, match=r"InputSignatureError.*input 'y' expects dtype int64"):
        reader.read()
    assert reader.global_step == 1


def test_an_empty_dataflow_pass_is_an_error():
    with pytest.raises(EmptyDataFlowError):
        dataflow_to_dataset([], SIG)

    class NoLen:
        def __iter__(self):
            return iter(())

    reader = InputReader(TFDatasetInput(NoLen()), SIG)
    # the dataflow's own error travels through tf.data's generator op
    with pytest.raises(tf.errors.OpError, match="EmptyDataFlowError.*no datapoint in a whole pass"):
        reader.read(steps_per_epoch=1)


def test_not_a_dataset():
    with pytest.raises(TypeError, match="tf.data.Dataset"):
        TFDatasetInput(42)
