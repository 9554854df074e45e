"""What the msgpack codec between trainstack's processes carries beyond msgpack's own types: ints
beyond 64 bits, dicts with int keys (between trainstack's own processes only), and the error that
names where an unsendable value sits inside a datapoint; and that a patched ``msgpack`` module
(``msgpack_numpy.patch()``, which tensorpack runs on import) changes nothing."""
from __future__ import annotations

import msgpack
import numpy as np
import pytest

from trainstack.dataflow import FrameError, InputError
from trainstack.dataflow.codec import decode_frame, dumps, encode_frame, loads
from trainstack.dataflow.errors import UnsendableError


@pytest.mark.parametrize("value", [2**64, 2**64 - 1, -(2**63), -(2**63) - 1, 2**200, -(2**200) + 7, 10**40])
def test_ints_of_any_size_round_trip(value):
    assert loads(dumps([value, {"n": value}])) == [value, {"n": value}]
    assert type(loads(dumps(value))) is int


def test_int_and_other_keys_round_trip_between_trainstacks_processes_only():
    datapoint = {1: "one", -2: [2], 0: {3: np.arange(2)}, 2**70: None, "s": 1, b"b": 2, 1.5: 3, None: 4}
    got = loads(dumps(datapoint), trusted=True)
    assert list(got) == list(datapoint)
    assert got[0][3].tolist() == [0, 1] and got[2**70] is None and got[None] == 4
    frame = decode_frame(encode_frame("result", datapoint={7: "x"}), peer="a worker", trusted=True)
    assert frame["datapoint"] == {7: "x"}
    # a remote peer may send only str and bytes keys
    with pytest.raises(FrameError, match="only str and bytes dict keys are accepted from this peer"):
        loads(dumps({1: "one"}), peer="a remote sender")


@pytest.mark.parametrize("datapoint, path", [
    ([1, {"boxes": [np.zeros(2), {3}]}], r"datapoint\[1\]\['boxes'\]\[1\]"),
    ([np.array([object(), 1], dtype=object)], r"datapoint\[0\]"),
    ({"a": [1, 2, object()]}, r"datapoint\['a'\]\[2\]"),
])
def test_an_unsendable_value_is_named_by_its_path(datapoint, path):
    with pytest.raises(UnsendableError, match=f"cannot send {path}") as info:
        dumps(datapoint)
    assert isinstance(info.value, TypeError) and isinstance(info.value, InputError)
    with pytest.raises(UnsendableError, match=path):
        encode_frame("result", datapoint=datapoint)


def test_a_tuple_dict_key_is_refused_where_it_is_decoded_with_a_clear_error():
    with pytest.raises(FrameError, match="a dict key that is a list or tuple"):
        loads(dumps({(1, 2): "tuple key"}), trusted=True)


def test_a_patched_msgpack_module_changes_nothing(monkeypatch):
    """``msgpack_numpy.patch()`` replaces ``msgpack.packb``/``unpackb``; the codec keeps msgpack's
    own, so arrays still travel as trainstack's extension type and nothing is unpickled."""
    def refuse(*args, **kwargs):
        raise AssertionError("the codec called the patched msgpack module")

    before = dumps([np.arange(3)])
    for name in ("packb", "unpackb", "Packer", "Unpacker", "dumps", "loads"):
        monkeypatch.setattr(msgpack, name, refuse)
    assert dumps([np.arange(3)]) == before
    assert loads(before)[0].tolist() == [0, 1, 2]


def test_threads_packing_at_once_each_get_their_own_datapoints_back():
    """The codec packs arrays' headers through one reused Packer per thread: the reader threads of
    a runner and the trainer's thread pack and unpack at the same time."""
    from concurrent.futures import ThreadPoolExecutor

    from trainstack.dataflow.codec import decode_frame, encode_frame_oob, pack_datapoint_oob

    def work(t):
        for i in range(300):
            dp = [np.full((i % 7) + 1, t * 1000 + i, np.int32), np.float16(i), np.zeros(3000 + t) + i]
            frame, oob_buffers = encode_frame_oob("data", 1 << 15, pass_num=i, datapoint=dp)
            oob = []
            got = decode_frame(frame, peer="test", trusted=True, oob=oob)["datapoint"]
            assert got[0].tolist() == dp[0].tolist() and got[1] == dp[1] and got[2].shape == dp[2].shape
            assert not oob_buffers and not oob  # 3000 float64: 24 KB < 32 KiB, inline
            packed, buffers = pack_datapoint_oob(dp, 1)  # every array out of band
            assert [bytes(b) for b in buffers] == [a.tobytes() for a in (dp[0], dp[2])]
        return t

    with ThreadPoolExecutor(4) as pool:
        assert sorted(pool.map(work, range(4))) == [0, 1, 2, 3]
