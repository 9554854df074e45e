"""The differential suite, the dataflows trainstack added to match tensorpack 0.11's list:
``BatchDataByShape``, ``RandomChooseData``, ``RandomMixData``, ``DataFromQueue``,
``MultiThreadRunner`` (``MultiThreadPrefetchData``), ``MultiProcessMapAndBatchData(ZMQ)`` and
``TestDataSpeed``, through both libraries. Where tensorpack defines no order (several threads or
processes) the datapoints are compared as multisets.
"""
from __future__ import annotations

import os
import queue
import sys
from typing import Any

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)
from pipelines import LIBS, closing, double, id_arrays, ids, observe, passes, seeded, take, tp, ts  # noqa: E402


def reset(ds: Any) -> Any:
    ds.reset_state()
    return ds


def both(build: Any) -> dict[str, Any]:
    return {name: build(lib) for name, lib in LIBS.items()}


def shapes_stream(n: int) -> list[list[Any]]:
    """Images of three shapes, interleaved, with a label."""
    return [[np.full((1 + k % 3, 2), k, dtype=np.float32), k] for k in range(n)]


# --- single-process ---------------------------------------------------------------------------

def test_batch_data_by_shape_groups_the_same_way():
    def build(lib):
        return reset(lib.BatchDataByShape(lib.DataFromList(shapes_stream(14), shuffle=False), 2, 0))

    got = {name: (passes(ds, 2), len(ds)) for name, ds in both(build).items()}
    assert got["trainstack"] == got["tensorpack"]
    (first, second), size = got["trainstack"]
    assert size == 7
    # groups carry over between passes: the second pass completes the first's leftovers
    assert len(first) == 6 and len(second) == 8  # 5, 5, 4 of each shape per pass
    assert first[0] == observe([np.stack([np.full((1, 2), k, np.float32) for k in (0, 3)]), np.array([0, 3], np.int32)])


def test_batch_data_by_shape_names_a_component_that_is_not_an_array():
    ds = reset(ts.BatchDataByShape(ts.DataFromList(ids(4), shuffle=False), 2, 0))
    with pytest.raises(TypeError, match="component 0 must be a NumPy array, got int"):
        list(ds)


@pytest.mark.parametrize("weighted", [False, True])
def test_random_choose_data_draws_the_same_sequence_with_a_fixed_seed(weighted):
    def build(lib):
        sources = [lib.DataFromList([[k] for k in range(10)], shuffle=False),
                   lib.DataFromList([[100 + k] for k in range(4)], shuffle=False)]
        return reset(lib.RandomChooseData(list(zip(sources, (0.7, 0.3))) if weighted else sources))

    with seeded(21):
        got = {name: passes(ds, 1)[0] for name, ds in both(build).items()}
    assert got["trainstack"] == got["tensorpack"]
    values = [dp[1][1] for dp in got["trainstack"]]
    assert values and any(v >= 100 for v in values) and any(v < 100 for v in values)
    with pytest.raises(ValueError, match="sum to"):
        ts.RandomChooseData([(ts.DataFromList([[1]]), 0.5), (ts.DataFromList([[2]]), 0.2)])


def test_random_mix_data_interleaves_the_same_way_with_a_fixed_seed():
    def build(lib):
        return reset(lib.RandomMixData([lib.DataFromList([[k] for k in range(6)], shuffle=False),
                                        lib.DataFromList([[100 + k] for k in range(3)], shuffle=False)]))

    with seeded(4):
        got = {name: (passes(ds, 2), len(ds)) for name, ds in both(build).items()}
    assert got["trainstack"] == got["tensorpack"]
    (first, second), size = got["trainstack"]
    assert size == 9 and first != second
    values = [dp[1][1] for dp in first]
    assert sorted(values) == [0, 1, 2, 3, 4, 5, 100, 101, 102]
    assert [v for v in values if v < 100] == list(range(6))  # each dataflow's own order kept


def test_data_from_queue_yields_what_is_put():
    for name, lib in LIBS.items():
        q: queue.Queue = queue.Queue()
        for dp in ids(5):
            q.put(dp)
        ds = reset(lib.DataFromQueue(q))
        assert take(ds, 5) == [observe(dp) for dp in ids(5)], name
        with pytest.raises(NotImplementedError):  # trainstack's SizeUnknownError is one too
            len(ds)
    with pytest.raises(TypeError, match="get"):
        ts.DataFromQueue([1, 2])


def test_test_data_speed_shows_a_tqdm_bar_and_passes_datapoints_through(capsys):
    for name, lib in LIBS.items():
        ds = lib.TestDataSpeed(lib.DataFromList(ids(20), shuffle=False), size=8, warmup=2)
        ds.start()
        bar = capsys.readouterr().err
        assert "8/8" in bar and "it/s" in bar, f"{name}'s progress bar: {bar!r}"
        assert take(reset(lib.TestDataSpeed(lib.DataFromList(ids(6), shuffle=False), size=3)), 6) == \
            [observe(dp) for dp in ids(6)]
        capsys.readouterr()
    speed_test = ts.TestDataSpeed(ts.DataFromList(ids(5), shuffle=False), size=50)
    assert speed_test.start() > 0 and speed_test.count == 5  # stops at the end of a short dataflow
    with pytest.raises(ValueError, match="size must be >= 1"):
        ts.TestDataSpeed(ts.DataFromList(ids(5)), size=0)


# --- threads ----------------------------------------------------------------------------------

def stop_tensorpack_threads(ds: Any) -> None:
    for th in ds.threads:
        th.stop()
    for th in ds.threads:
        th.join(10)


@pytest.mark.parametrize("cls", ["MultiThreadRunner", "MultiThreadPrefetchData"])
def test_multi_thread_runner_with_one_thread_keeps_the_order(cls):
    got = {}
    for name, lib in LIBS.items():
        ds = getattr(lib, cls)(lambda lib=lib: lib.DataFromList(id_arrays(6), shuffle=False), 3, 1)
        ds.reset_state()
        try:
            got[name] = (len(ds), passes(ds, 2))
        finally:
            ds.close() if name == "trainstack" else stop_tensorpack_threads(ds)
    assert got["trainstack"] == got["tensorpack"]
    assert got["trainstack"][1][0] == [observe(dp) for dp in id_arrays(6)]


def test_multi_thread_runner_with_two_threads_gives_len_datapoints_of_the_dataflow():
    for name, lib in LIBS.items():
        ds = lib.MultiThreadRunner(lambda lib=lib: lib.DataFromList(ids(5), shuffle=True), 4, 2)
        ds.reset_state()
        try:
            out = passes(ds, 3)
        finally:
            ds.close() if name == "trainstack" else stop_tensorpack_threads(ds)
        assert [len(p) for p in out] == [5, 5, 5], name
        assert set(dp for p in out for dp in p) <= {observe(dp) for dp in ids(5)}, name


def test_multi_thread_runner_raises_a_threads_error_instead_of_hanging(run_with_deadline):
    """Documented difference: tensorpack's consumer waits forever when a thread's dataflow
    raises; trainstack raises it (not run through tensorpack, which would hang)."""
    def broken() -> Any:
        return ts.MapData(ts.DataFromList(ids(4), shuffle=False), lambda dp: dp[5])

    with closing(ts.MultiThreadRunner(broken, 2, 2)) as ds:
        ds.reset_state()
        with pytest.raises(RuntimeError, match="thread .*IndexError"):
            run_with_deadline(lambda: list(ds), 120)  # a hang guard only


# --- worker processes (the cases through both are in parallel_cases.py) --------------------

def test_map_and_batch_default_buffer_size_works_in_trainstack_not_in_tensorpack():
    """Documented difference: tensorpack 0.11 compares ``batch_size < buffer_size`` before
    defaulting ``buffer_size``, so leaving it out is a ``TypeError`` there."""
    with pytest.raises(TypeError):
        tp.MultiProcessMapAndBatchData(tp.DataFromList(id_arrays(4)), 2, double, 2)
    with closing(ts.MultiProcessMapAndBatchData(ts.DataFromList(id_arrays(8), shuffle=False), 2, double, 2)) as ds:
        assert ds.buffer_size == 20 and len(ds) == 4  # len: batches per pass of ds (an addition)
        ds.reset_state()
        assert len(take(ds, 4)) == 4
    with pytest.raises(ValueError, match="buffer_size"):
        ts.MultiProcessMapAndBatchData(ts.DataFromList(id_arrays(4)), 2, double, 4, buffer_size=4)
