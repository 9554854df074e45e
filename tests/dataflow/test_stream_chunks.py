"""Stream workers (MultiProcessRunner, MultiProcessDataFlow) send the small datapoints they make
quickly several per ``chunk`` frame, and each slow or large one at once: what the worker's frames
hold, in which order, and that each datapoint still arrives once, whole, in its worker's order."""
from __future__ import annotations

import os
import sys
import time

import numpy as np
import pytest

from trainstack.dataflow import DataFromList, MultiProcessDataFlow, MultiProcessRunner, MultiProcessRunnerZMQ
from trainstack.dataflow._worker_main import CHUNK_BYTES, CHUNK_DATAPOINTS, CHUNK_SECONDS, _frames
from trainstack.dataflow.codec import decode_frame
from trainstack.dataflow.frame_io import OOB_MIN_BYTES

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:  # worker processes import the helpers by module name
    sys.path.insert(0, HERE)
import df_transport_workers as helpers  # noqa: E402


def one_pass(dataflow, **kwargs):
    """The frames of a stream worker's first pass over ``dataflow``, decoded (their out-of-band
    arrays filled in), up to and including its ``end_of_pass``."""
    frames = []
    for data, buffers in _frames(dataflow, **{"index": 0, "count": 1, "sharded": False, "map_func": None,
                                              "max_empty_passes": None, **kwargs}):
        oob = []
        frame = decode_frame(data, peer="the test", trusted=True, oob=oob)
        assert len(oob) == len(buffers)
        for array, raw in zip(oob, buffers):
            array.reshape(-1).view(np.uint8)[:] = np.frombuffer(raw, np.uint8)
        frames.append((frame, len(data)))
        if frame["kind"] == "end_of_pass":
            return frames
    raise AssertionError("no end_of_pass")


def chunks(frames):
    assert frames[-1][0] == {"kind": "end_of_pass", "pass_num": 0}
    assert all(f["kind"] == "chunk" and f["pass_num"] == 0 for f, _ in frames[:-1])
    return [f["datapoints"] for f, _ in frames[:-1]]


class Slow:
    """Datapoints ``[i]`` made in ``delay`` seconds each."""

    def __init__(self, n: int, delay: float) -> None:
        self.n, self.delay = n, delay

    def __iter__(self):
        for i in range(self.n):
            time.sleep(self.delay)
            yield [i]


class FailsAfter:
    def __init__(self, n: int) -> None:
        self.n = n

    def __iter__(self):
        yield from ([i] for i in range(self.n))
        raise ValueError("the dataflow broke")


def test_small_datapoints_made_quickly_share_frames_in_their_order():
    data = [[np.arange(64, dtype=np.float32) * i, i] for i in range(500)]
    got = chunks(one_pass(DataFromList(data, shuffle=False)))
    assert [int(dp[1]) for chunk in got for dp in chunk] == list(range(500))
    for chunk in got:
        for x, i in chunk:
            assert x.dtype == np.float32 and x.shape == (64,) and np.array_equal(x, data[i][0])
    assert max(map(len, got)) == CHUNK_DATAPOINTS
    # a chunk goes early only when the machine stalled for CHUNK_SECONDS: far fewer frames than datapoints
    assert len(got) < 500 / 4


def test_a_chunk_holds_at_most_about_chunk_bytes():
    size = (OOB_MIN_BYTES - 1024) // 4  # just under the out-of-band size: packed inline
    data = [[np.full(size, i, dtype=np.float32)] for i in range(20)]
    frames = one_pass(DataFromList(data, shuffle=False))
    got = chunks(frames)
    assert [int(dp[0][0]) for chunk in got for dp in chunk] == list(range(20))
    assert max(map(len, got)) == -(-CHUNK_BYTES // (size * 4))  # the datapoint that crossed the bound ends it
    assert all(n < CHUNK_BYTES + OOB_MIN_BYTES for _, n in frames)


def test_a_datapoint_slower_than_chunk_seconds_goes_alone_at_once():
    got = chunks(one_pass(Slow(4, CHUNK_SECONDS * 1.5)))
    assert got == [[[0]], [[1]], [[2]], [[3]]]


def test_a_datapoint_with_out_of_band_arrays_goes_alone_after_the_chunk_before_it():
    big = np.arange(OOB_MIN_BYTES // 4, dtype=np.float32)
    data = [[1], [2], [big], [3]]
    got = chunks(one_pass(DataFromList(data, shuffle=False)))
    assert [len(c) for c in got] == [2, 1, 1]
    assert got[0] == [[1], [2]] and got[2] == [[3]]
    assert np.array_equal(got[1][0][0], big)


def test_datapoints_made_before_a_failure_are_sent_before_it():
    frames = _frames(FailsAfter(3), index=0, count=1, sharded=False, map_func=None, max_empty_passes=None)
    data, buffers = next(frames)
    assert decode_frame(data, trusted=True, oob=[])["datapoints"] == [[0], [1], [2]] and buffers == []
    with pytest.raises(ValueError, match="the dataflow broke"):
        next(frames)


def test_passes_end_their_chunks_and_a_sharded_worker_keeps_its_share():
    frames = _frames(DataFromList([[i] for i in range(10)], shuffle=False), index=1, count=3, sharded=True,
                     map_func=None, max_empty_passes=None)
    seen = [decode_frame(next(frames)[0], trusted=True, oob=[]) for _ in range(4)]
    assert seen == [{"kind": "chunk", "pass_num": 0, "datapoints": [[1], [4], [7]]},
                    {"kind": "end_of_pass", "pass_num": 0},
                    {"kind": "chunk", "pass_num": 1, "datapoints": [[1], [4], [7]]},
                    {"kind": "end_of_pass", "pass_num": 1}]


@pytest.mark.parametrize("size", [64, OOB_MIN_BYTES])  # packed inline; out of band
def test_a_dataflow_reusing_its_arrays_delivers_each_datapoint_as_it_was_made(size):
    with MultiProcessRunner(helpers.ReusedArray(300, size), num_prefetch=4, num_proc=1) as runner:
        got = list(runner)
    assert [i for _, i in got] == list(range(300))
    assert all(x.shape == (size,) and (x == i).all() for x, i in got)


def test_every_datapoint_arrives_once_through_the_runners_and_the_sharded_workers():
    data = [[np.arange(8, dtype=np.int32) + i, i] for i in range(1000)]
    with MultiProcessDataFlow(DataFromList(data, shuffle=False), 2) as sharded:
        for _ in range(2):
            got = list(sharded)
            assert sorted(i for _, i in got) == list(range(1000))
            assert all(np.array_equal(x, data[i][0]) for x, i in got)
    with MultiProcessRunnerZMQ(DataFromList(data, shuffle=False), num_proc=1, hwm=2) as runner:
        # one worker: the dataflow's order, pass after pass, whatever the chunks' bounds
        got = [i for _ in range(3) for _, i in runner]
    assert got == list(range(1000)) * 3
