"""trainstack.dataflow's TFRecordSerializer, here because it needs TensorFlow (the inputs session
has it; the dataflow and parity sessions do not). tensorpack 0.11's TFRecordSerializer needs
TensorFlow 1's ``tf.python_io``, so no session can run it beside trainstack's: only trainstack's
round trip, in tensorpack's layout (one serialized datapoint per record), is tested."""
from __future__ import annotations

import pickle

import numpy as np
import pytest
import tensorflow as tf

from trainstack.dataflow import DataFromList, TFRecordSerializer


def datapoints() -> list[list]:
    return [[np.arange(k, k + 4, dtype=np.float32).reshape(2, 2), k, f"s{k}", {"box": [k, 1.5]}] for k in range(5)]


def passes_of(ds, count: int = 1) -> list[list]:
    ds.reset_state()
    return [[dp for dp in ds] for _ in range(count)]


@pytest.mark.parametrize("serializer", ["pickle", "msgpack"])
def test_tfrecord_serializer_round_trip(tmp_path, serializer):
    path = str(tmp_path / "data.tfrecord")
    TFRecordSerializer.save(DataFromList(datapoints(), shuffle=False), path, serializer=serializer)
    records = [r.numpy() for r in tf.data.TFRecordDataset(path)]
    assert len(records) == 5
    if serializer == "pickle":  # tensorpack's layout: each record is its dumps() of the datapoint
        assert [pickle.loads(r)[1] for r in records] == list(range(5))
    (got,) = passes_of(TFRecordSerializer.load(path, serializer="auto"))
    for dp, expected in zip(got, datapoints()):
        assert dp[0].dtype == np.float32 and dp[0].tolist() == expected[0].tolist()
        assert dp[1:] == expected[1:]
    with pytest.raises(TypeError):
        len(TFRecordSerializer.load(path))  # a TFRecord file stores no size
    sized = TFRecordSerializer.load(path, size=3)
    assert len(sized) == 3
    assert [[dp[1] for dp in p] for p in passes_of(sized, 2)] == [[0, 1, 2], [3, 4, 0]]  # keep_state, as tensorpack
    if serializer == "pickle":
        with pytest.raises(ValueError, match="refuses pickle"):
            passes_of(TFRecordSerializer.load(path, serializer="msgpack"))
