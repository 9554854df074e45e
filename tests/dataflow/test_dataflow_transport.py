"""The transport between the trainer and its worker processes: large arrays out of band (their
bytes written from and read into the arrays, after the msgpack frame), several datapoints per
frame for the map workers, the reader threads (one per worker) of MultiProcessRunner (up to
``num_prefetch`` frames ahead) and of MultiProcessDataFlow (pass by pass), and the frames a
remote peer may not send."""
from __future__ import annotations

import gc
import multiprocessing as mp
import os
import signal
import sys
import threading
import time
from collections import defaultdict

import numpy as np
import pytest

from trainstack.dataflow import (
    DataFromList,
    FrameError,
    InputError,
    InputWorkerError,
    MultiProcessDataFlow,
    MultiProcessMapData,
    MultiProcessRunner,
    MultiProcessRunnerZMQ,
)
from trainstack.dataflow.codec import decode_frame, encode_frame, encode_frame_oob, loads
from trainstack.dataflow.frame_io import OOB_MIN_BYTES, recv_frame, send_frame

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:  # worker processes import the helpers by module name
    sys.path.insert(0, HERE)
import df_transport_workers as helpers  # noqa: E402


def assert_same(got, expected, path="dp"):
    if isinstance(expected, np.ndarray):
        assert isinstance(got, np.ndarray), path
        assert got.dtype == expected.dtype and got.shape == expected.shape, path
        assert np.array_equal(got, expected), path
        assert got.flags.writeable and got.flags.c_contiguous, path
    elif isinstance(expected, np.generic):
        assert type(got) is type(expected) and got == expected, path
    elif isinstance(expected, dict):
        assert set(got) == set(expected), path
        for k in expected:
            assert_same(got[k], expected[k], f"{path}[{k!r}]")
    elif isinstance(expected, (list, tuple)):
        assert isinstance(got, list) and len(got) == len(expected), path
        for k, (g, e) in enumerate(zip(got, expected)):
            assert_same(g, e, f"{path}[{k}]")
    else:
        assert type(got) is type(expected) and got == expected, path


def test_the_helper_arrays_cover_both_paths():
    frame, buffers = encode_frame_oob("data", OOB_MIN_BYTES, pass_num=0, datapoint=helpers.arrays(0))
    assert len(buffers) == 11  # the large ones, out of band; the small ones inline
    assert len(frame) < OOB_MIN_BYTES * 2


def test_send_frame_and_recv_frame_over_a_pipe_with_more_buffers_than_one_writev_takes():
    reader, writer = mp.Pipe(duplex=False)
    datapoints = [helpers.arrays(3), [np.arange(k, dtype=np.int32) for k in range(1, 700)], {"nothing": 1}]
    sent = [encode_frame_oob("data", 1, pass_num=0, datapoint=dp) for dp in datapoints]
    assert len(sent[1][1]) == 699  # one writev takes at most 512 buffers
    thread = threading.Thread(target=lambda: [send_frame(writer, *f) for f in sent])
    thread.start()  # the pipe holds less than a frame: the writer blocks until this side reads
    try:
        for dp in datapoints:
            frame = recv_frame(reader, peer="the test")
            assert_same(frame["datapoint"], dp)
    finally:
        thread.join()
        writer.close()
    with pytest.raises(EOFError):
        recv_frame(reader, peer="the test")
    reader.close()


def test_a_frame_cut_in_the_middle_of_its_arrays_is_an_eof():
    reader, writer = mp.Pipe(duplex=False)
    frame, buffers = encode_frame_oob("data", 1, pass_num=0, datapoint=[np.arange(100.0)])
    writer.send_bytes(frame)
    os.write(writer.fileno(), buffers[0][:50])
    writer.close()
    with pytest.raises(EOFError, match="middle of a frame"):
        recv_frame(reader, peer="the test")
    reader.close()


def test_out_of_band_arrays_are_refused_unless_the_decoder_takes_them():
    frame, buffers = encode_frame_oob("data", 1, pass_num=0, datapoint=[np.arange(10)])
    assert len(buffers) == 1
    for decode in (lambda: decode_frame(frame, peer="a server"), lambda: loads(frame, trusted=True),
                   lambda: decode_frame(frame, peer="a worker", trusted=True)):
        with pytest.raises(FrameError, match="out-of-band array"):
            decode()
    oob = []
    got = decode_frame(frame, peer="a worker", trusted=True, oob=oob)
    assert got["datapoint"][0] is oob[0] and oob[0].shape == (10,)
    # without out-of-band arrays, the same bytes as encode_frame
    assert encode_frame_oob("data", OOB_MIN_BYTES, pass_num=1, datapoint=[np.arange(10)]) == (
        encode_frame("data", pass_num=1, datapoint=[np.arange(10)]), [])


def test_arrays_of_every_kind_arrive_whole_through_the_map_workers_and_the_stream_workers():
    expected = {i: helpers.arrays(i) for i in range(6)}
    with MultiProcessMapData(DataFromList([[i] for i in range(6)], shuffle=False), 2, helpers.arrays_of,
                             buffer_size=3, strict=True) as mapped:
        got = list(mapped)
    assert sorted(dp["index"] for dp in got) == list(range(6))
    for dp in got:
        assert_same(dp, expected[dp["index"]])
    with MultiProcessDataFlow(helpers.Arrays(6), 2) as sharded:
        got = list(sharded)
    assert sorted(dp["index"] for dp in got) == list(range(6))
    for dp in got:
        assert_same(dp, expected[dp["index"]])


@pytest.mark.parametrize("num_proc, buffer_size", [(1, 1), (2, 3), (2, 200)])
def test_chunked_tasks_answer_each_datapoint_once_even_when_map_func_reuses_its_arrays(num_proc, buffer_size):
    n = 150
    with MultiProcessMapData(DataFromList([[i] for i in range(n)], shuffle=False), num_proc,
                             helpers.reuse_outputs, buffer_size=buffer_size, strict=True) as mapped:
        for _ in range(2):
            got = list(mapped)
            assert sorted(int(dp[0]) for dp in got) == [i for i in range(n) if i % 7]
            for i, big, small in got:
                assert big.shape == (helpers.BIG,) and (big == i).all() and (small == i).all()
            if num_proc == 1:  # one worker: the dataflow's order
                assert [int(dp[0]) for dp in got] == [i for i in range(n) if i % 7]


def test_a_worker_killed_while_it_sends_large_arrays_is_an_input_worker_error():
    ds = MultiProcessRunner(helpers.LargeForever(), num_prefetch=1, num_proc=2)
    try:
        it = iter(ds)
        for _ in range(5):
            assert next(it)[0].shape == (1 << 19,)
        victim = ds.workers[0]
        os.kill(victim.pid, signal.SIGKILL)
        with pytest.raises(InputWorkerError, match="SIGKILL"):
            for _ in range(10_000):
                next(it)
        assert not any(p.is_alive() for p in ds.workers)
        assert reader_threads() == []
    finally:
        ds.close()


def reader_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("trainstack-dataflow-reader")]


def test_the_runner_delivers_each_workers_datapoints_whole_once_and_in_that_workers_order():
    with MultiProcessRunnerZMQ(helpers.ArraysWithPid(6), num_proc=2, hwm=2) as runner:
        got = [dp for _ in range(4) for dp in runner]  # 4 passes of len(ds) = 6 datapoints
        assert len(reader_threads()) == 2
        pids = {p.pid for p in runner.workers}
    assert len(got) == 24
    by_worker = defaultdict(list)
    for dp in got:
        by_worker[dp.pop("pid")].append(dp["index"])
        assert_same(dp, helpers.arrays(dp["index"]))
    assert set(by_worker) <= pids
    for indices in by_worker.values():  # each worker runs the whole dataflow, pass after pass
        assert indices == [k % 6 for k in range(len(indices))]
    assert reader_threads() == [] and mp.active_children() == []


def test_the_readers_read_ahead_up_to_num_prefetch_datapoints_and_no_more():
    with MultiProcessRunner(helpers.LargeForever(), num_prefetch=3, num_proc=2) as runner:
        it = iter(runner)
        next(it)
        deadline = time.monotonic() + 30
        while runner._readers._queue.qsize() < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)  # the workers go on producing; the readers wait at the bound
        assert runner._readers._queue.qsize() == 3
        assert all(next(it)[0].shape == (1 << 19,) for _ in range(10))


def test_closing_the_runner_from_another_thread_wakes_its_reader_and_leaves_nothing_behind():
    runner = MultiProcessRunner(helpers.SlowForever(delay=60), num_prefetch=2, num_proc=2)
    errors = []

    def consume():
        try:
            next(iter(runner))
        except Exception as e:  # noqa: BLE001 - checked below
            errors.append(e)

    consumer = threading.Thread(target=consume)
    consumer.start()
    deadline = time.monotonic() + 30
    while len(reader_threads()) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    runner.close()
    consumer.join(10)
    assert not consumer.is_alive()
    assert len(errors) == 1 and isinstance(errors[0], InputError)
    assert "closed while it was being read" in str(errors[0])
    assert reader_threads() == [] and mp.active_children() == []


def test_a_runner_dropped_without_close_stops_its_workers_and_readers():
    runner = MultiProcessRunner(helpers.LargeForever(), num_prefetch=2, num_proc=2)
    it = iter(runner)
    next(it)
    assert len(reader_threads()) == 2
    del it, runner
    gc.collect()
    assert reader_threads() == [] and mp.active_children() == []


def queued_passes(df) -> set[int]:
    """The passes of the frames MultiProcessDataFlow's reader threads hold for the iteration."""
    return {frame["pass_num"] for _, frame in list(df._readers._queue.queue) if isinstance(frame, dict)}


def test_the_sharded_workers_readers_read_no_pass_ahead_until_the_pass_is_whole_then_read_it_ahead():
    with MultiProcessDataFlow(worker_factory=helpers.fast_and_slow, num_workers=2, size=55) as df:
        for pass_num in range(3):
            got = []
            for dp in df:  # worker 0's pass is made at once, worker 1's takes 0.25 s
                got.append(dp[0])
                assert queued_passes(df) <= {pass_num}
            assert sorted(got) == list(range(50)) + list(range(100, 105))
            deadline = time.monotonic() + 30
            while pass_num + 1 not in queued_passes(df) and time.monotonic() < deadline:
                time.sleep(0.01)  # the pass is whole: the next one is read ahead, before its iteration
            assert queued_passes(df) == {pass_num + 1}
        assert len(reader_threads()) == 2
    assert reader_threads() == [] and mp.active_children() == []


def test_a_sharded_worker_dying_after_its_pass_is_raised_while_another_still_works_on_it(run_with_deadline):
    df = MultiProcessDataFlow(worker_factory=helpers.dies_after_its_pass_beside_a_slow_one, num_workers=2, size=5)
    with pytest.raises(InputWorkerError, match=r"worker 0 of 2 \(pid \d+\) died with exit code 3 during pass 1"):
        run_with_deadline(lambda: list(df), 300)  # a hang guard: worker 1's pass takes two hours
    assert reader_threads() == [] and mp.active_children() == []
