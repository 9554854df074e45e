"""Multi-process and multi-thread dataflows: MultiProcessMapData, MultiThreadMapData,
MultiProcessRunner(ZMQ), the shards of MultiProcessDataFlow, and what goes to the workers by
value (lambdas, closures, definitions of the main script) without re-running the main script."""
from __future__ import annotations

import contextlib
import itertools
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter

import pytest

from trainstack.dataflow import (
    DataFromList,
    InputError,
    InputWorkerError,
    MapData,
    MultiProcessDataFlow,
    MultiProcessMapData,
    MultiProcessMapDataZMQ,
    MultiProcessRunner,
    MultiProcessRunnerZMQ,
    MultiThreadMapData,
    PrefetchData,
    PrefetchDataZMQ,
    fix_rng_seed,
)

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:  # worker processes import the helpers by module name
    sys.path.insert(0, HERE)
import df_workers  # noqa: E402


def ids_of(points) -> list[int]:
    return [int(dp[0]) for dp in points]


def test_multiprocess_map_data_gives_the_multiset_of_map_data():
    ds = DataFromList(df_workers.ids(40))  # shuffled: the pass order differs from run to run
    expected = MapData(DataFromList(df_workers.ids(40), shuffle=False), df_workers.square_or_drop_multiples_of_5)
    expected = sorted((int(a), int(b)) for a, b in expected)
    with MultiProcessMapData(ds, 3, df_workers.square_or_drop_multiples_of_5, buffer_size=7, strict=True) as mapped:
        mapped.reset_state()
        assert len(mapped) == 40
        for _ in range(2):  # each pass is exactly one pass of ds, mapped
            got = sorted((int(a), int(b)) for a, b in mapped)
            assert got == expected and len(got) == 32


def test_multiprocess_map_data_runs_map_func_in_the_workers_and_ds_here():
    ds = DataFromList(df_workers.ids(30), shuffle=False)
    with MultiProcessMapData(ds, 2, df_workers.tag_with_pid, strict=True) as mapped:
        points = list(mapped)
        pids = {int(dp[1]) for dp in points}
        assert pids <= {p.pid for p in mapped.workers} and os.getpid() not in pids
        assert sorted(ids_of(points)) == list(range(30))


def test_non_strict_map_data_is_an_endless_reordering_of_repeated_passes():
    with MultiProcessMapDataZMQ(DataFromList(df_workers.ids(10)), 2, df_workers.tag_with_pid,
                                buffer_size=4) as mapped:
        mapped.reset_state()
        taken = ids_of(itertools.islice(iter(mapped), 35))
        more = ids_of(itertools.islice(iter(mapped), 5))  # a new __iter__ continues the stream
    counts = Counter(taken + more)
    # 40 out of an endless stream of passes with at most 4 datapoints in flight: all 10 ids,
    # each 3 to 5 times (4 passes, give or take what the buffer holds back across an edge)
    assert set(counts) == set(range(10)) and sum(counts.values()) == 40
    assert min(counts.values()) >= 3 and max(counts.values()) <= 5


def test_an_abandoned_strict_pass_does_not_leak_into_the_next():
    with MultiProcessMapData(DataFromList(df_workers.ids(20)), 2, df_workers.tag_with_pid, buffer_size=6,
                             strict=True) as mapped:
        mapped.reset_state()
        next(iter(mapped))  # abandoned with up to 6 datapoints in flight
        assert sorted(ids_of(mapped)) == list(range(20))


def test_a_map_func_error_is_raised_with_its_traceback():
    with MultiProcessMapData(DataFromList(df_workers.ids(20), shuffle=False), 2, df_workers.fail_on_7,
                             strict=True) as mapped:
        with pytest.raises(InputWorkerError, match=r"(?s)worker \d of 2 .*refuses datapoint 7"):
            list(mapped)
    lock = threading.Lock()
    with pytest.raises(InputError, match="picklable"):
        MultiProcessMapData(DataFromList(df_workers.ids(3)), 2, lambda dp: lock and dp).reset_state()
    with pytest.raises(TypeError, match="map_func"):
        MultiProcessMapData(DataFromList(df_workers.ids(3)), 2)
    with pytest.raises(ValueError, match="num_proc"):
        MultiProcessMapData(DataFromList(df_workers.ids(3)), 0, df_workers.tag_with_pid)


def test_multithread_map_data_gives_the_multiset_of_map_data():
    ds = DataFromList(df_workers.ids(50))
    mapped = MultiThreadMapData(ds, 4, lambda dp: None if int(dp[0]) % 7 == 0 else [dp[0] * 2],
                                buffer_size=5, strict=True)
    mapped.reset_state()
    try:
        for _ in range(2):
            assert sorted(ids_of(mapped)) == sorted(2 * i for i in range(50) if i % 7)
        endless = MultiThreadMapData(ds, 2, lambda dp: dp, buffer_size=3)
        endless.reset_state()
        assert Counter(ids_of(itertools.islice(iter(endless), 100))).keys() == set(range(50))
        endless.close()
    finally:
        mapped.close()


def test_multiprocess_runner_runs_the_whole_dataflow_in_every_worker():
    ds = df_workers.PidFlow(6)
    with MultiProcessRunner(ds, num_prefetch=10, num_proc=2) as runner:
        runner.reset_state()
        assert len(runner) == 6
        producers: set[int] = set()
        deadline = time.monotonic() + 60  # until the second worker, started a bit later, sends too
        while time.monotonic() < deadline:
            points = list(runner)
            assert len(points) == 6  # a pass is len(ds) datapoints, from whichever worker
            for k, reset_pid, pid in points:
                assert int(reset_pid) == int(pid)  # ds.reset_state() ran in the worker that iterates it
                assert 0 <= int(k) < 6
                producers.add(int(pid))
            if len(producers) == 2:
                break
        assert producers == {p.pid for p in runner.workers}  # every worker ran the whole ds
    assert ds.reset_pid is None  # ... and not here
    assert PrefetchData is MultiProcessRunner and PrefetchDataZMQ is MultiProcessRunnerZMQ


def test_multiprocess_runner_zmq_without_size_is_endless_and_workers_draw_differently():
    with MultiProcessRunnerZMQ(df_workers.EndlessRandomWithPid(), num_proc=2) as runner:
        with pytest.raises(NotImplementedError):
            len(runner)
        by_worker: dict[int, set[int]] = {}
        for value, pid in itertools.islice(iter(runner), 100_000):  # endless: stopped here
            by_worker.setdefault(int(pid), set()).add(int(value))
            if len(by_worker) == 2 and min(map(len, by_worker.values())) >= 50:
                break
    assert len(by_worker) == 2 and min(map(len, by_worker.values())) >= 50
    first, second = by_worker.values()
    assert not first & second  # two workers seeded on their own draw different numbers


def test_runner_workers_with_a_fixed_seed_are_reproducible_and_distinct():
    def draw() -> list[list[int]]:
        """The first 5 numbers of each worker, by worker index."""
        fix_rng_seed(11)
        try:
            with MultiProcessRunner(df_workers.EndlessRandomWithPid(), 5, num_proc=2) as runner:
                runner.reset_state()
                index = {p.pid: i for i, p in enumerate(runner.workers)}
                streams: list[list[int]] = [[], []]
                # one worker may run alone for a while (the other still starting on a busy machine)
                for value, pid in itertools.islice(iter(runner), 1_000_000):
                    streams[index[int(pid)]].append(int(value))
                    if min(map(len, streams)) >= 5:
                        return [s[:5] for s in streams]
        finally:
            fix_rng_seed(None)
        raise AssertionError("a worker sent fewer than 5 datapoints in 1,000,000")

    first, second = draw(), draw()
    assert first == second  # worker i's numbers come from seed 11 + 1 + i
    assert first[0] != first[1]


def test_sharded_workers_of_a_shuffled_list_deliver_every_datapoint_once_per_pass():
    # each worker shuffles the list and keeps its shard: a partition only because all
    # workers of one start share a seed
    with MultiProcessDataFlow(DataFromList(df_workers.ids(30)), 3) as df:
        df.reset_state()
        passes = [ids_of(df) for _ in range(3)]
    for p in passes:
        assert sorted(p) == list(range(30))
    assert passes[0] != sorted(passes[0]) or passes[1] != sorted(passes[1])  # shuffled


SCRIPT = """
import logging, os, sys
sys.path.insert(0, {here!r})
with open({marker!r}, "a") as f:  # runs once per process that runs this script
    f.write(f"{{os.getpid()}}\\n")
import numpy as np
from trainstack.dataflow import DataFromList, MultiProcessDataFlow, MultiProcessMapData
import df_workers

OFFSET = 100

class InMain:
    def __len__(self):
        return 6
    def __iter__(self):
        for i in range(6):
            yield [np.array(i)]

def add_offset(dp):
    return [dp[0] + OFFSET]

if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s %(message)s")
    flow = InMain() if sys.argv[1] == "main" else df_workers.ids(6)
    with MultiProcessDataFlow(flow, 2) as df:
        print(sorted(int(dp[0]) for dp in df), flush=True)
    scale = 3
    for func in (add_offset, lambda dp: [dp[0] * scale]):  # a script function, a closure
        with MultiProcessMapData(DataFromList(df_workers.ids(4), shuffle=False), 2, func, strict=True) as m:
            print(sorted(int(dp[0]) for dp in m), flush=True)
"""


@pytest.mark.parametrize("where", ["module", "main"])
def test_workers_never_rerun_the_main_script_and_get_its_definitions_by_value(tmp_path, where):
    marker = tmp_path / "runs.txt"
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(SCRIPT.format(here=HERE, marker=str(marker))))
    out = subprocess.run([sys.executable, str(script), where], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:3] == [str(list(range(6))), "[100, 101, 102, 103]", "[0, 3, 6, 9]"]
    assert len(marker.read_text().split()) == 1, "a worker re-ran the main script"


def test_a_dataflow_from_an_interactive_main_goes_to_the_workers_by_value():
    code = textwrap.dedent("""
        from trainstack.dataflow import MultiProcessDataFlow
        class Flow:
            def __iter__(self):
                yield from ([7], [8], [9])
        with MultiProcessDataFlow(Flow(), 2, size=3) as df:
            print(sorted(int(dp[0]) for dp in df))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "[7, 8, 9]", out.stdout + out.stderr


def test_the_spawn_preparation_data_is_multiprocessings_own_outside_a_worker_start():
    """Workers start without the main script because multiprocessing's ``get_preparation_data``
    is wrapped while they start, and only then: before and after, and in another thread that
    spawns while they start, it is the standard library's own function."""
    import multiprocessing.spawn as mp_spawn

    from trainstack.dataflow import _worker_pool

    original = mp_spawn.get_preparation_data
    seen_elsewhere: list[dict] = []
    started = threading.Event()
    real_main_left_out = _worker_pool._main_left_out

    def main_left_out():  # while each worker starts, another thread asks for the preparation data
        with real_main_left_out():
            assert mp_spawn.get_preparation_data is not original  # wrapped, during the start only
            other = threading.Thread(target=lambda: seen_elsewhere.append(mp_spawn.get_preparation_data("x")))
            other.start()
            other.join(10)
            started.set()
            yield

    _worker_pool._main_left_out = contextlib.contextmanager(main_left_out)
    try:
        with MultiProcessDataFlow(DataFromList([[k] for k in range(4)], shuffle=False), 2) as df:
            assert sorted(int(dp[0]) for dp in df) == [0, 1, 2, 3]
    finally:
        _worker_pool._main_left_out = real_main_left_out
    assert started.is_set()
    assert mp_spawn.get_preparation_data is original
    assert len(seen_elsewhere) == 2 and all(data == original("x") for data in seen_elsewhere), \
        "the processes another thread spawns while workers start lost the main module"
