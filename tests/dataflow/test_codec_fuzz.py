"""Fuzzing the msgpack codec that carries datapoints between processes and hosts (hypothesis).

What workers and remote servers send round-trips exactly; anything else a
peer may send (random bytes, truncated or corrupted frames, arrays whose
header claims a huge shape) raises FrameError, never another exception, and
decoding never allocates what a header claims before checking it against
the frame's bytes. Every test runs a bounded number of examples.
"""
from __future__ import annotations

import math
import struct
import tracemalloc

import msgpack
import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from trainstack.dataflow import FrameError
from trainstack.dataflow.codec import FRAME_FIELDS, decode_frame, dumps, encode_frame, loads

# generous per-example deadlines: they catch a decoder that hangs, not a slow machine
FUZZ = settings(max_examples=150, deadline=5000, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# -- what dumps can send --------------------------------------------------------------------------

DTYPES = st.one_of(
    hnp.boolean_dtypes(),
    hnp.integer_dtypes(endianness="?"),
    hnp.unsigned_integer_dtypes(endianness="?"),
    hnp.floating_dtypes(endianness="?"),
    hnp.complex_number_dtypes(endianness="?"),
    hnp.byte_string_dtypes(endianness="=", min_len=1, max_len=4),
    hnp.unicode_string_dtypes(endianness="?", min_len=1, max_len=3),
    hnp.datetime64_dtypes(endianness="?"),
    hnp.timedelta64_dtypes(endianness="?"),
)


@st.composite
def arrays(draw):
    """Arrays of every sendable dtype, 0-d and empty included, some of them views that are not
    contiguous (reversed, strided, transposed)."""
    dtype = draw(DTYPES)
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=5))
    arr = draw(hnp.arrays(dtype, shape))
    view = draw(st.sampled_from(["as is", "reversed", "strided", "transposed"]))
    if arr.ndim and view == "reversed":
        arr = arr[::-1]
    elif arr.ndim and view == "strided":
        arr = arr[::2]
    elif view == "transposed":
        arr = arr.T
    return arr


def numpy_scalars():
    return arrays().filter(lambda a: a.size > 0).map(lambda a: a.reshape(-1)[0])


LEAVES = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**63), 2**64 - 1), st.floats(allow_nan=True),
    st.text(max_size=20), st.binary(max_size=20), arrays(), numpy_scalars(),
)
DATAPOINTS = st.recursive(
    LEAVES,
    lambda children: st.one_of(st.lists(children, max_size=4), st.tuples(children, children),
                               st.dictionaries(st.text(max_size=8), children, max_size=4)),
    max_leaves=12,
)


def assert_same(out, sent, where="datapoint"):
    """``out`` is what decoding gives for ``sent``: tuples become lists; arrays and NumPy scalars
    keep their type, dtype (byte order too), shape and bytes (NaN and NaT compare by bytes)."""
    if isinstance(sent, np.ndarray):
        assert isinstance(out, np.ndarray), where
        assert (out.dtype, out.shape) == (sent.dtype, sent.shape), where
        assert out.tobytes() == np.ascontiguousarray(sent).tobytes(), where
        assert out.flags.writeable and out.flags.c_contiguous, where
    elif isinstance(sent, np.generic):
        assert type(out) is type(sent) and out.dtype == sent.dtype, where
        assert out.tobytes() == sent.tobytes(), where
    elif isinstance(sent, (list, tuple)):
        assert type(out) is list and len(out) == len(sent), where
        for i, (o, s) in enumerate(zip(out, sent)):
            assert_same(o, s, f"{where}[{i}]")
    elif isinstance(sent, dict):
        assert type(out) is dict and list(out) == list(sent), where
        for k in sent:
            assert_same(out[k], sent[k], f"{where}[{k!r}]")
    elif isinstance(sent, float):
        assert type(out) is float and struct.pack("<d", out) == struct.pack("<d", sent), where
    else:
        assert type(out) is type(sent) and out == sent, where


@FUZZ
@given(DATAPOINTS)
@example({"": np.bytes_(b"")})  # 0 bytes wide (a draw found it in the corrupted-frames test)
@example([np.str_(""), np.array([b"\x00"], "S1")[0]])  # what an "S1" array of b"\x00" yields: S0
def test_datapoints_round_trip_through_dumps_and_loads(dp):
    assert_same(loads(dumps(dp)), dp)


@FUZZ
@given(DATAPOINTS, st.integers(0, 2**32))
def test_datapoints_round_trip_in_data_frames(dp, pass_num):
    frame = decode_frame(encode_frame("data", pass_num=pass_num, datapoint=dp), peer="worker 0")
    assert sorted(frame) == ["datapoint", "kind", "pass_num"]
    assert (frame["kind"], frame["pass_num"]) == ("data", pass_num)
    assert_same(frame["datapoint"], dp)


# -- what a broken or hostile peer can send ---------------------------------------------------------

DECODED_TYPES = (type(None), bool, int, float, str, bytes, np.ndarray, np.generic)


def assert_only_sendable_types(obj):
    """What loads returns holds only what dumps sends (no msgpack.Timestamp, no ExtType, ...)."""
    stack = [obj]
    while stack:
        o = stack.pop()
        if isinstance(o, list):
            stack.extend(o)
        elif isinstance(o, dict):
            assert all(isinstance(k, (str, bytes)) for k in o), o
            stack.extend(o.values())
        else:
            assert isinstance(o, DECODED_TYPES), type(o)
            if isinstance(o, (np.ndarray, np.generic)):
                assert o.dtype.kind in "biufcSUmM"
                # an empty bytes or str scalar is 0 bytes wide (NumPy strips its padding): dumps
                # sends np.bytes_(b"") drawn from an "S1" array; no array is 0 bytes wide
                assert o.dtype.itemsize > 0 or isinstance(o, (np.bytes_, np.str_)), o.dtype


def loads_or_frame_error(data: bytes):
    """loads(data), or None when it raised FrameError; any other exception fails the test."""
    try:
        obj = loads(data, peer="the fuzzer")
    except FrameError as e:
        assert "from the fuzzer" in str(e)
        return None
    assert_only_sendable_types(obj)
    return obj


def decode_frame_or_frame_error(data: bytes):
    try:
        frame = decode_frame(data, peer="the fuzzer")
    except FrameError as e:
        assert "fuzzer" in str(e) or "malformed" in str(e)
        return None
    # what decode_frame lets through is a well-formed frame
    assert set(frame) == {"kind", *FRAME_FIELDS[frame["kind"]]}
    assert_only_sendable_types(frame)
    return frame


# byte strings that exercise msgpack's headers and the array extension more than uniform bytes do
MSGPACK_BYTES = st.lists(st.one_of(
    st.binary(max_size=8),
    st.sampled_from([b"\xc1", b"\xc4", b"\xc5\xff\xff", b"\xc6\xff\xff\xff\xff", b"\xdc\xff\xff",
                     b"\xdd\xff\xff\xff\xff", b"\xdf\x7f\xff\xff\xff", b"\xd4\x01", b"\xd6\xff",
                     b"\xc7\x10\x01", b"\xc8\x00\x10\x02", b"\xc9\xff\xff\xff\xff\x01", b"\x93",
                     b"\x81\xa4kind", b"\xa4data", b"\xa3<f4", b"\x91\x00"]),
), max_size=12).map(b"".join)


@FUZZ
@given(st.one_of(st.binary(max_size=512), MSGPACK_BYTES))
@example(b"")
@example(b"\x91" * 100_000)  # nested deeper than msgpack's stack
@example(b"\xd6\xff\x00\x00\x00\x00")  # msgpack timestamp: not something dumps sends
@example(b"\x81\xa4kind\xd6\xff\x00\x00\x00\x00")
def test_arbitrary_bytes_decode_or_raise_frame_error(data):
    loads_or_frame_error(data)
    decode_frame_or_frame_error(data)


def valid_frames():
    return st.one_of(
        st.builds(lambda size: encode_frame("hello", size=size), st.none() | st.integers(0, 10**6)),
        st.builds(lambda p, dp: encode_frame("data", pass_num=p, datapoint=dp), st.integers(0, 99), DATAPOINTS),
        st.builds(lambda p: encode_frame("end_of_pass", pass_num=p), st.integers(0, 99)),
        st.builds(lambda m: encode_frame("error", message=m), st.text(max_size=40)),
        st.builds(lambda dp: encode_frame("result", datapoint=dp), DATAPOINTS),
    )


@FUZZ
@given(valid_frames(), st.data())
def test_truncated_frames_raise_frame_error(frame, data):
    cut = data.draw(st.integers(0, len(frame) - 1), label="cut")
    # a msgpack object says how long it is: any strict prefix of one is incomplete
    with pytest.raises(FrameError, match="malformed frame .* from the fuzzer"):
        decode_frame(frame[:cut], peer="the fuzzer")
    with pytest.raises(FrameError, match="trailing bytes"):
        decode_frame(frame + frame[:max(cut, 1)], peer="the fuzzer")


@FUZZ
@given(valid_frames(), st.data())
def test_corrupted_frames_decode_or_raise_frame_error(frame, data):
    corrupted = bytearray(frame)
    for _ in range(data.draw(st.integers(1, 4), label="flips")):
        i = data.draw(st.integers(0, len(frame) - 1), label="at")
        corrupted[i] = data.draw(st.integers(0, 255).filter(lambda b, i=i: b != corrupted[i]), label="byte")
    loads_or_frame_error(bytes(corrupted))
    decode_frame_or_frame_error(bytes(corrupted))


# -- array headers that claim more than the frame holds --------------------------------------------

def ext_array(dtype, shape, raw: bytes, code: int = 1) -> bytes:
    return msgpack.packb([msgpack.ExtType(code, msgpack.packb([dtype, shape, raw]))])


def peak_bytes_of(func, *args) -> int:
    tracemalloc.start()
    try:
        func(*args)
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak


def assert_refused_without_allocating(data: bytes, match: str) -> None:
    def decode():
        with pytest.raises(FrameError, match=match):
            loads(data, peer="the fuzzer")
    assert peak_bytes_of(decode) < 2 * 2**20  # what a header claims below is terabytes


HUGE_CLAIMS = [
    ("2**40 floats, no bytes", ext_array("<f8", [2**40], b""), r"needs 8796093022208 bytes, the frame has 0"),
    ("2**40 bytes claimed, 8 sent", ext_array("|u1", [2**20, 2**20], b"\0" * 8), "needs 1099511627776 bytes"),
    ("shape overflowing int64", ext_array("<f4", [2**63 - 1, 2**63 - 1], b"\0" * 4), "needs .* bytes, the frame has 4"),
    ("shape overflowing, one zero", ext_array("<f4", [2**62, 2**62, 0], b""), "is not a NumPy array's"),
    ("zero-size dtype, huge shape", ext_array("|S0", [2**40], b""), "refused dtype '|S0'"),
    ("zero-size str scalar", ext_array("<U0", [], b"", code=2), "refused dtype '<U0'"),
    ("itemsize 2**40", ext_array("<U274877906944", [1], b""), "unknown dtype|needs"),
    ("subarray dtype", ext_array("(1099511627776,)f8", [1], b""), "unknown dtype|refused dtype"),
    ("dtype string too long", ext_array("<" + "f" * 100_000, [1], b""), "longer than 32 characters"),
    ("1000 dimensions", ext_array("<f4", [1] * 1000, b"\0" * 4), "1000 dimensions, more than 64"),
    ("negative dimension", ext_array("<f4", [-1, -(2**40)], b""), "bad shape"),
    ("bool dimension", ext_array("<f4", [True], b"\0" * 4), "bad shape"),
    ("object dtype", ext_array("|O", [2**40], b""), "refused dtype '|O'"),
    ("list header claims 2**32-1 items", b"\xdd\xff\xff\xff\xff", "exceeds max_array_len"),
    ("map header claims 2**32-1 pairs", b"\xdf\xff\xff\xff\xff", "exceeds max_map_len"),
    ("bin header claims 4 GiB", b"\xc6\xff\xff\xff\xff" + b"\0" * 16, "incomplete|exceeds"),
    ("array ext claims 4 GiB", b"\xc9\xff\xff\xff\xff\x01" + b"\0" * 16, "incomplete|exceeds"),
    ("header of a huge list inside the ext", msgpack.packb(msgpack.ExtType(1, b"\xdd\xff\xff\xff\xff")),
     "an array's header is not msgpack"),
]


@pytest.mark.parametrize("data, match", [pytest.param(d, m, id=name) for name, d, m in HUGE_CLAIMS])
def test_huge_claims_are_refused_without_allocating(data, match):
    assert_refused_without_allocating(data, match)


@FUZZ
@given(st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=8).filter(lambda s: math.prod(s) > 2**24),
       st.sampled_from(["|u1", "<f4", ">i8", "<c16", "|S3", "<U2", "<M8[s]", "?"]),
       st.integers(0, 64), st.sampled_from([1, 2]))
def test_arrays_claiming_more_than_they_hold_are_refused_without_allocating(shape, dtype, n, code):
    assert_refused_without_allocating(ext_array(dtype, shape, b"\x01" * n, code), "needs .* bytes|NumPy scalar")


@FUZZ
@given(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4), DTYPES, st.data())
def test_array_headers_with_wrong_bytes_are_refused(shape, dtype, data):
    needed = math.prod(shape) * dtype.itemsize
    n = data.draw(st.integers(0, needed + 8).filter(lambda k: k != needed), label="bytes")
    with pytest.raises(FrameError, match=f"needs {needed} bytes, the frame has {n}"):
        loads(ext_array(dtype.str, list(shape), b"\x00" * n))
