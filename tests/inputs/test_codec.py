"""The msgpack codec: datapoints with NumPy arrays round-trip; malformed frames are refused."""
from __future__ import annotations

import pickle

import msgpack
import numpy as np
import pytest

from trainstack.inputs import FrameError
from trainstack.inputs.codec import decode_frame, dumps, encode_frame, loads


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint16", ">i4", "int64", "float16", "float32",
                                   "float64", "complex64", "S5", "U3", "datetime64[ms]", "timedelta64[s]"])
def test_arrays_round_trip_with_dtype_shape_and_values(dtype):
    rng = np.random.default_rng(0)
    arr = rng.integers(0, 100, size=(3, 4, 2)).astype(dtype)
    out = loads(dumps({"x": arr, "nested": [arr[:1], (arr[0, 0, 0],)]}))
    assert out["x"].dtype == arr.dtype and out["x"].shape == arr.shape
    np.testing.assert_array_equal(out["x"], arr)
    np.testing.assert_array_equal(out["nested"][0], arr[:1])
    assert out["nested"][1] == [arr[0, 0, 0]]  # tuples come back as lists
    assert type(out["nested"][1][0]) is type(arr[0, 0, 0])


def test_special_arrays_and_scalars():
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    strided = base.T[::2]  # not contiguous
    empty = np.zeros((0, 3), np.int32)
    zero_d = np.array(7, np.int16)
    scalar = np.float64(2.5)
    out = loads(dumps([strided, empty, zero_d, scalar, 3, "text", b"raw", None, True]))
    np.testing.assert_array_equal(out[0], strided)
    assert out[1].shape == (0, 3) and out[1].dtype == np.int32
    assert isinstance(out[2], np.ndarray) and out[2].shape == () and out[2] == 7
    assert isinstance(out[3], np.float64) and out[3] == 2.5
    assert out[4:] == [3, "text", b"raw", None, True]


def test_decoded_arrays_are_writable_copies():
    data = dumps([np.zeros(3, np.float32)])
    first = loads(data)[0]
    first += 1
    np.testing.assert_array_equal(loads(data)[0], np.zeros(3))


@pytest.mark.parametrize("value, match", [
    (np.array([{"a": 1}, None], dtype=object), "object"),
    (np.zeros(2, dtype=[("a", "i4"), ("b", "f4")]), "structured"),
    ({1, 2}, "set"),
    (object(), "object"),
])
def test_what_needs_pickle_is_refused_when_encoding(value, match):
    with pytest.raises(TypeError, match=match):
        dumps([value])


def _ext_array(dtype: str, shape: list, raw: bytes) -> bytes:
    return msgpack.packb([msgpack.ExtType(1, msgpack.packb([dtype, shape, raw]))])


class _Creates:
    """Unpickling this would create a file: the codec must never get that far."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


@pytest.mark.parametrize("name, data", [
    ("truncated", dumps([np.arange(10)])[:-3]),
    ("trailing bytes", dumps([1, 2]) + b"\x01"),
    ("invalid byte", b"\xc1"),
    ("unknown extension", msgpack.packb(msgpack.ExtType(42, b"xx"))),
    ("object dtype", _ext_array("|O", [1], b"\0" * 8)),
    ("unknown dtype", _ext_array("nonsense", [1], b"\0")),
    ("bytes disagree with shape", _ext_array("<f4", [1000, 1000], b"\0" * 8)),
    ("negative dimension", _ext_array("<f4", [-2], b"")),
    ("bad header", msgpack.packb(msgpack.ExtType(1, msgpack.packb({"dtype": "<f4"})))),
])
def test_malformed_data_raises_frame_error_naming_the_peer(name, data):
    with pytest.raises(FrameError, match="from worker 3"):
        loads(data, peer="worker 3")


def test_pickle_is_never_unpickled(tmp_path):
    target = tmp_path / "created"
    with pytest.raises(FrameError, match="malformed"):
        loads(pickle.dumps(_Creates(str(target))), peer="x")
    assert not target.exists()


def test_frames_round_trip_and_are_checked():
    dp = [np.arange(3)]
    frame = decode_frame(encode_frame("data", pass_num=2, datapoint=dp), peer="p")
    assert frame["kind"] == "data" and frame["pass_num"] == 2
    np.testing.assert_array_equal(frame["datapoint"][0], dp[0])
    assert decode_frame(encode_frame("hello", size=None))["size"] is None

    bad = [dumps([1, 2]), dumps({"kind": "teleport"}), dumps({"kind": "data", "pass_num": 0}),
           dumps({"kind": "end_of_pass", "pass_num": -1}), dumps({"kind": "end_of_pass", "pass_num": True}),
           dumps({"kind": "error", "message": 3}), dumps({"kind": "end_of_pass", "pass_num": 0, "x": 1})]
    for data in bad:
        with pytest.raises(FrameError, match="from the server"):
            decode_frame(data, peer="the server")
    with pytest.raises(FrameError, match="unknown kind"):
        encode_frame("teleport")
