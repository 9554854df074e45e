"""Input signatures and the errors every source gives when data disagrees with them."""
from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from trainstack.inputs import (
    BatchQueueInput,
    DatapointCheck,
    FeedInput,
    InputError,
    InputSignatureError,
    QueueInput,
    TensorInput,
    TFDatasetInput,
    check_datapoint,
    check_datapoint_at,
    normalize_signature,
)

SIG = [tf.TensorSpec([None, 2], tf.float32, name="image"), tf.TensorSpec([None], tf.int32, name="label")]


@pytest.mark.parametrize("signature, match", [
    (tf.TensorSpec([1], tf.float32), "non-empty list of tf.TensorSpec"),
    ([], "non-empty list"),
    ([tf.TensorSpec([1], tf.float32), "label"], "entry 1 must be a tf.TensorSpec"),
    ([tf.TensorSpec([1], tf.float32, "a"), tf.TensorSpec([1], tf.float32, "a")], r"duplicate names \['a'\]"),
])
def test_bad_signatures(signature, match):
    with pytest.raises(InputSignatureError, match=match):
        normalize_signature(signature)


def test_unnamed_specs_are_named_by_position():
    specs = normalize_signature([tf.TensorSpec([1], tf.float32), tf.TensorSpec([2], tf.int32, "y")])
    assert [s.name for s in specs] == ["input0", "y"]


def test_values_convert_as_tensorpacks_feed_did_and_garbage_is_refused():
    x, y = check_datapoint((np.zeros([3, 2]), np.zeros([3], "int64")), normalize_signature(SIG))
    assert x.dtype == np.float32 and y.dtype == np.int32
    _, y = check_datapoint((np.zeros([3, 2]), np.array([0.0, 1.0, 2.0])), normalize_signature(SIG))
    assert y.dtype == np.int32 and y.tolist() == [0, 1, 2]
    with pytest.raises(InputSignatureError, match=r"src: input 'label' expects dtype int32.*float64.*NaN"):
        check_datapoint((np.zeros([3, 2]), np.full([3], np.nan)), normalize_signature(SIG), source="src")


WIDE = normalize_signature([tf.TensorSpec([None, 2], tf.float32, "image"), tf.TensorSpec([None], tf.int32, "label"),
                            tf.TensorSpec(None, tf.string, "name"), tf.TensorSpec([], tf.int64, "step")])
GOOD = [np.zeros([3, 2], np.float32), np.arange(3, dtype=np.int32), np.array([b"a", b"b", b"c"], object),
        np.array(7, np.int64)]


@pytest.mark.parametrize("datapoint", [
    GOOD,  # exactly the signature: the fast path
    tuple(GOOD),
    dict(zip(["image", "label", "name", "step"], GOOD)),
    [np.zeros([3, 2]), *GOOD[1:]],  # float64 -> float32
    [GOOD[0].astype(">f4"), *GOOD[1:]],  # same kind, other byte order
    [GOOD[0].tolist(), *GOOD[1:]],  # a list, not an array
    [GOOD[0], GOOD[1], np.array(["a", "b", "c"]), GOOD[3]],  # unicode strings
    [GOOD[0], GOOD[1], np.zeros([2, 2, 2], object), 7],  # any shape for an unknown-rank spec; a Python int
    [np.zeros([3, 3], np.float32), *GOOD[1:]],  # wrong width
    [np.zeros([3], np.float32), *GOOD[1:]],  # wrong rank
    [GOOD[0], GOOD[1].astype(np.float32), *GOOD[2:]],  # float -> int converted
    [GOOD[0], np.full(3, np.inf, np.float32), *GOOD[2:]],  # infinity -> int refused
    GOOD[:3],  # a component missing
    {"image": GOOD[0]},
    "not a datapoint",
])
def test_the_datapoint_check_of_a_stream_gives_what_check_datapoint_at_gives(datapoint):
    def outcome(check):
        try:
            return [(a.dtype, a.shape, a.tolist()) for a in check(4, 2, datapoint)]
        except InputSignatureError as e:
            return str(e)

    expected = outcome(lambda p, i, dp: check_datapoint_at(p, i, dp, WIDE, source="src"))
    assert outcome(DatapointCheck(WIDE, source="src")) == expected


def test_the_datapoint_check_returns_the_arrays_of_a_matching_datapoint_themselves():
    arrays = DatapointCheck(WIDE)(0, 0, GOOD)
    assert all(a is b for a, b in zip(arrays, GOOD))


def test_setup_and_tower_misuse_are_clear_errors():
    source = TensorInput(lambda: [tf.zeros([1, 2]), tf.zeros([1], tf.int32)])
    with pytest.raises(InputError, match="not set up yet"):
        source.input_signature  # noqa: B018
    with pytest.raises(ValueError, match="num_towers"):
        source.setup(SIG, num_towers=0)
    source.setup(SIG, num_towers=1)
    with pytest.raises(InputError, match="already set up"):
        source.setup(SIG)

    @tf.function
    def step():
        with source.tracing():
            source.get_input_tensors(0)
            return source.get_input_tensors(1)  # a second tower, but set up for one

    with pytest.raises(ValueError, match=r"tower_index=.*\[0, 0\], got 1.*set up for 1 tower"):
        step()


def bad_label_datapoints():
    good = (np.zeros([2, 2], "float32"), np.zeros([2], "int32"))
    return [good, (good[0], np.full([2], np.nan, "float32"))]  # NaN has no int32 value


def bad_label_examples():
    good = (np.zeros([2], "float32"), np.int32(0))
    return [good, good, (good[0], np.float32(np.nan))]


@pytest.mark.parametrize("make_source, error_type", [
    (lambda: FeedInput(bad_label_datapoints()), InputSignatureError),
    (lambda: QueueInput(bad_label_datapoints()), InputSignatureError),
    (lambda: BatchQueueInput(bad_label_examples(), batch_size=2), InputSignatureError),
    # raised inside tf.data's generator op: the message keeps the error and its text
    (lambda: TFDatasetInput(bad_label_datapoints()), tf.errors.OpError),
], ids=["feed", "queue", "batchqueue", "dataset"])
def test_every_python_fed_source_names_the_bad_input_and_its_spec(make_source, error_type, read_input):
    source = make_source()
    with pytest.raises(error_type) as caught:
        read_input(source, SIG, steps_per_epoch=3)
    message = str(caught.value)
    assert "'label' expects dtype int32" in message and "float32" in message
    assert source.name in message
