"""TensorInput (tensors from a function, once per tower) and DummyConstantInput."""
from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from trainstack.inputs import DummyConstantInput, InputError, InputReader, InputSignatureError, TensorInput

SIG = [tf.TensorSpec([None, 2], tf.float32, name="x"), tf.TensorSpec([None], tf.int32, name="y")]


def counting_fn():
    """A get_tensor_fn whose every evaluation is a fresh batch: labels 1, 2, 3, ..."""
    counter = tf.Variable(0, dtype=tf.int32)

    def fn():
        n = counter.assign_add(1)
        return [tf.fill([3, 2], tf.cast(n, tf.float32)), tf.fill([3], n)]

    return fn


def labels(batches) -> list[list[int]]:
    return [[int(tower[1][0]) for tower in step] for step in batches]


def test_fresh_tensors_each_step_and_size_sets_the_epoch():
    source = TensorInput(counting_fn(), size=3)
    assert source.size() == 3
    batches = InputReader(source, SIG).read(max_epoch=2)
    assert labels(batches) == [[1], [2], [3], [4], [5], [6]]
    np.testing.assert_array_equal(batches[0][0][0], np.ones([3, 2], "float32"))


def test_each_tower_calls_the_function_for_its_own_batch():
    calls = []
    fn = counting_fn()

    def traced_fn():
        calls.append(1)
        return fn()

    batches = InputReader(TensorInput(traced_fn), SIG, num_towers=2).read(steps_per_epoch=3)
    assert labels(batches) == [[1, 2], [3, 4], [5, 6]]
    assert len(calls) % 2 == 0 and calls  # twice per trace


def test_unknown_size_is_a_clear_error():
    with pytest.raises(InputError, match="no size.*steps_per_epoch"):
        TensorInput(counting_fn()).size()
    with pytest.raises(ValueError, match="positive int"):
        TensorInput(counting_fn(), size=0)
    with pytest.raises(TypeError, match="function"):
        TensorInput([tf.ones([1])])


@pytest.mark.parametrize("fn, match", [
    (lambda: tf.ones([3, 2]), "must return a list of tensors"),
    (lambda: [tf.ones([3, 2])], "1 tensors.*expects 2"),
    (lambda: [tf.ones([3, 2]), tf.ones([3])], r"'y' expects dtype int32.*dtype float32"),
    (lambda: [tf.ones([3, 5]), tf.ones([3], tf.int32)], r"'x' expects .*\(None, 2\).*shape \(3, 5\)"),
])
def test_tensors_disagreeing_with_the_signature(fn, match):
    with pytest.raises(InputSignatureError, match=match):  # the reader traces its step at once
        InputReader(TensorInput(fn), SIG).read(steps_per_epoch=1)


def test_dummy_constants_have_the_shapes_and_dtypes_and_stay_fixed():
    source = DummyConstantInput([[4, 2], [4]])
    batches = InputReader(source, SIG, num_towers=2).read(steps_per_epoch=3)
    x0, y0 = batches[0][0]
    assert x0.shape == (4, 2) and x0.dtype == np.float32 and y0.shape == (4,) and y0.dtype == np.int32
    assert ((x0 >= 0) & (x0 < 1)).all() and set(y0.tolist()) <= {0, 1}
    for step in batches[1:]:
        for tower in (0, 1):
            for a, b in zip(step[tower], batches[0][tower]):
                np.testing.assert_array_equal(a, b)
    assert not np.array_equal(batches[0][0][0], batches[0][1][0])  # towers have their own batch


@pytest.mark.parametrize("shapes, match", [
    ([[4, 3], [4]], r"shape \(4, 3\) given for input 'x'.*\(None, 2\)"),
    ([[4, 2]], "1 shapes.*2 inputs"),
    ([[None, 2], [4]], "must be fully defined"),
])
def test_dummy_shapes_must_match_the_signature(shapes, match):
    with pytest.raises(InputSignatureError, match=match):
        DummyConstantInput(shapes).setup(SIG)
