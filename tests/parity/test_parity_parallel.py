"""The differential suite, parallel dataflows: ``MultiProcessMapData`` (strict and not,
``num_proc=None``, empty input, a map function that mutates its argument, raises or is a lambda,
iterating twice), ``MultiThreadMapData``, the runners (``MultiProcessRunner``,
``MultiProcessRunnerZMQ``), ``MultiProcessMapAndBatchData`` and the datapoint types that survive a
worker process, through tensorpack 0.11 and trainstack. Several workers: datapoints compared as
multisets; one worker: in order. Two workers, tiny data.

The multi-process cases are in ``parallel_cases.py``: tensorpack's run there in a fresh process
(see its docstring for why), trainstack's here. Where trainstack is deliberately different the
test asserts trainstack's documented behaviour (packages/dataflow/README.md, "Differences from
tensorpack"); cases where tensorpack 0.11 hangs forever run through trainstack only.
"""
from __future__ import annotations

import contextlib
import itertools
import os
import pickle
import signal
import subprocess
import sys
from typing import Any

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)
import parallel_cases  # noqa: E402
from mapfuncs import identity, refuse_three  # noqa: E402 - workers import it by name (not this test module)
from parallel_cases import CASES, GUARDED, RUNNERS, TUPLES, increment_in_place, mapped, multiset  # noqa: E402
from pipelines import LIBS, closing, double, ids, mixed_types, observe, outcome, passes, take, tp, ts  # noqa: E402
from zoo import ZOO, EmptyEveryOtherPass, summary  # noqa: E402


@pytest.fixture(scope="module")
def tensorpack_outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple]:
    """Every case of parallel_cases.py through tensorpack, in a fresh process (in a session of its
    own: tensorpack's workers of a runner inside a runner outlive their parent, which cannot
    stop them without python-prctl, so whatever is left of the session is killed after it)."""
    out = tmp_path_factory.mktemp("tensorpack") / "outcomes.pickle"
    with open(out.with_suffix(".log"), "w+b") as log:
        proc = subprocess.Popen([sys.executable, parallel_cases.__file__, str(out)], stdout=log, stderr=log,
                                start_new_session=True)
        try:
            code = proc.wait(timeout=300)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.seek(0)
        assert code == 0, f"tensorpack's cases failed to run:\n{log.read()[-3000:].decode(errors='replace')}"
    with open(out, "rb") as f:
        return pickle.load(f)


def tensorpack_value(outcomes: dict[str, tuple], name: str) -> Any:
    result = outcomes[name]
    if result[0] == "hang":
        pytest.skip(f"tensorpack 0.11 hung in case {name!r} on every try (a race of its "
                    "MultiProcessMapData: tasks lost, workers alive and idle); nothing to compare")
    assert result[0] == "ok", f"tensorpack raised in case {name!r}: {result[1:]}"
    return result[1]


def run_trainstack(name: str) -> Any:
    return CASES[name](ts)


SAME = ["strict_twice[MultiProcessMapData]", "strict_twice[MultiProcessMapDataZMQ]", "endless_one_worker",
        "endless_two_workers", "none_results_endless", "lambda_map_func",
        "runner_one_process[MultiProcessRunner]", "runner_two_processes[MultiProcessRunner]",
        "runner_one_process[MultiProcessRunnerZMQ]", "runner_two_processes[MultiProcessRunnerZMQ]",
        "runner_pass_abandoned_midway[MultiProcessRunner]", "runner_pass_abandoned_midway[MultiProcessRunnerZMQ]",
        "types[MultiProcessMapData]", "types[MultiProcessRunnerZMQ]", "mutating_map_func",
        "map_and_batch_one_process",
        "map_and_batch_two_processes[MultiProcessMapAndBatchData]",
        "map_and_batch_two_processes[MultiProcessMapAndBatchDataZMQ]"]
#: every dataflow class of tensorpack's in each runner (one worker); the guarded ones in MultiProcessMapData
ZOO_CASES = [f"zoo[{r}][{n}]" for r in RUNNERS for n in ZOO] + \
    [f"zoo[MultiProcessMapData][{n}]" for n in GUARDED if n != "LocallyShuffleData"]
#: passes that yield nothing, a runner in a runner
EMPTY_PASS_CASES = [f"{c}[{r}]" for r in RUNNERS for c in ("empty_every_other_pass", "batch_by_shape_empty_first_pass")]
SAME += ZOO_CASES + EMPTY_PASS_CASES + ["empty_every_other_pass[MultiProcessMapData endless]",
                                       "nested[MultiProcessRunnerZMQ in MultiProcessRunnerZMQ]"]


@pytest.mark.parametrize("name", SAME)
def test_the_same_observation_in_both(tensorpack_outcomes, name):
    expected = tensorpack_value(tensorpack_outcomes, name)
    assert run_trainstack(name) == expected, f"case {name!r}: trainstack differs from tensorpack 0.11"


def test_the_cases_observe_what_they_should(tensorpack_outcomes):
    """The observations compared above are the right ones (so that agreeing means something)."""
    doubled = multiset([observe(double(dp)) for dp in ids(7)])
    assert tensorpack_value(tensorpack_outcomes, "strict_twice[MultiProcessMapData]") == [doubled, doubled]
    assert tensorpack_value(tensorpack_outcomes, "types[MultiProcessMapData]") == \
        multiset([observe(dp) for dp in mixed_types()])
    assert tensorpack_value(tensorpack_outcomes, "types[MultiProcessRunnerZMQ]") == \
        [observe(dp) for dp in mixed_types()]
    assert tensorpack_value(tensorpack_outcomes, "endless_one_worker") == \
        (10, sorted(repr(observe(double(dp))) for dp in ids(4)))
    assert tensorpack_value(tensorpack_outcomes, "none_results_endless") == \
        (9, sorted(repr(observe(dp)) for dp in ids(6)[::2]))
    assert tensorpack_value(tensorpack_outcomes, "mutating_map_func") == [[1, 2, 3, 4]] * 2
    rest_first = [observe(dp) for dp in ids(5)[3:] + ids(5)[:3]]
    assert tensorpack_value(tensorpack_outcomes, "runner_pass_abandoned_midway[MultiProcessRunnerZMQ]") == \
        ([observe(dp) for dp in ids(3)], [rest_first, rest_first])
    lengths, seen, bounded = tensorpack_value(tensorpack_outcomes, "runner_two_processes[MultiProcessRunner]")
    assert lengths == [5, 5] and set(seen) <= {repr(observe(dp)) for dp in ids(5)} and bounded


def test_every_dataflow_class_runs_in_a_worker_as_in_its_own_process(tensorpack_outcomes):
    """What the zoo cases compare is what each dataflow gives in the process that made it (so
    that agreeing with tensorpack means the worker ran it, not that both failed alike)."""
    for name in ZOO:
        for runner in RUNNERS:
            size, got = tensorpack_value(tensorpack_outcomes, f"zoo[{runner}][{name}]")
            ds = ZOO[name](ts)
            ds.reset_state()
            with closing(ds):
                kind, own_size = outcome(lambda: len(ds))  # noqa: B023 - called at once
                if kind == "ok":
                    assert size == own_size, f"{runner}({name}): size {size}, in its own process {own_size}"
                    if name == "LocallyShuffleData":  # its own passes never end: a runner's are len(ds)
                        own = [list(itertools.islice(iter(ds), own_size)) for _ in range(2)]
                    else:
                        own = [list(ds), list(ds)]
                    assert got == summary(name, own), f"{runner}({name}) differs from {name}"
                else:
                    assert size == "no size", name
    size, (lengths, all_known) = tensorpack_value(tensorpack_outcomes, "zoo[MultiProcessRunnerZMQ][RandomChooseData]")
    assert size == "no size" and lengths == [4] and all_known


def test_a_pass_that_yields_nothing_is_skipped_as_in_tensorpack(tensorpack_outcomes):
    """tensorpack's runners go on to the next pass when one yields nothing (so do the endless
    parallel maps, through ``RepeatedData``); trainstack's runners did refuse such a pass."""
    every_other = [observe(dp) for dp in ids(3)]
    for runner in RUNNERS:
        assert tensorpack_value(tensorpack_outcomes, f"empty_every_other_pass[{runner}]") == [every_other] * 2
        size, got = tensorpack_value(tensorpack_outcomes, f"batch_by_shape_empty_first_pass[{runner}]")
        assert size == 1 and [len(p) for p in got] == [1, 1, 1]
    # and MultiThreadRunner's threads (no fork: both libraries run here)
    for name, lib in LIBS.items():
        ds = lib.MultiThreadRunner(lambda lib=lib: lib.MapData(EmptyEveryOtherPass(), identity), 4, 1)
        ds.reset_state()
        try:
            assert passes(ds, 2) == [every_other] * 2, name
        finally:
            if name == "trainstack":
                ds.close()
            else:
                for th in ds.threads:
                    th.stop()
                for th in ds.threads:
                    th.join(10)
    # last: tensorpack's MultiProcessMapData sometimes loses its tasks (then the rest is skipped)
    count, seen = tensorpack_value(tensorpack_outcomes, "empty_every_other_pass[MultiProcessMapData endless]")
    assert count == 7 and seen == sorted(repr(observe(double(dp))) for dp in ids(3))


def test_a_dataflow_that_never_yields_waits_forever_in_tensorpack_and_raises_in_trainstack(
        tensorpack_outcomes, run_with_deadline):
    """Documented difference: a runner's worker whose dataflow yields nothing in every pass spins
    forever in tensorpack 0.11 (its consumer waits); trainstack's fails after
    ``MAX_EMPTY_PASSES`` passes in a row with ``EmptyDataFlowError``, within seconds."""
    from trainstack.dataflow.protocol import MAX_EMPTY_PASSES

    for runner in RUNNERS:
        assert tensorpack_outcomes[f"never_yields[{runner}]"][0] == "hang", tensorpack_outcomes[f"never_yields[{runner}]"]
        with pytest.raises(ts.InputWorkerError,
                           match=rf"EmptyDataFlowError: the dataflow NeverYields yielded no datapoint in "
                                 rf"{MAX_EMPTY_PASSES} passes in a row"):
            run_with_deadline(lambda: run_trainstack(f"never_yields[{runner}]"), 120)  # noqa: B023


def test_strict_with_none_results_drops_them_in_trainstack_and_asserts_in_tensorpack(tensorpack_outcomes):
    """Documented difference: tensorpack's strict mode forbids ``None`` results
    (``AssertionError``); trainstack's drops the datapoint, as ``MapData`` does."""
    assert tensorpack_value(tensorpack_outcomes, "none_results_strict") == "AssertionError"
    assert run_trainstack("none_results_strict") == [multiset([observe(dp) for dp in ids(6)[::2]])] * 2


def test_num_proc_none_is_one_per_core_in_trainstack_and_a_type_error_in_tensorpack(tensorpack_outcomes):
    """Documented difference: tensorpack 0.11 documents ``num_proc=None`` but compares it with 0."""
    assert tensorpack_value(tensorpack_outcomes, "num_proc_none") == "TypeError"
    assert run_trainstack("num_proc_none") == (os.cpu_count() or 1, multiset([observe(double(dp)) for dp in ids(3)]))
    with pytest.raises(TypeError):
        tp.MultiThreadMapData(tp.DataFromList(ids(3)), None, double)
    with closing(ts.MultiThreadMapData(ts.DataFromList(ids(3)), None, double)) as ds:
        assert ds.num_thread == (os.cpu_count() or 1)


def test_empty_input(tensorpack_outcomes, run_with_deadline):
    """Documented difference: tensorpack refuses an empty dataflow in strict mode when it is
    made (``AssertionError``: its buffer shrinks to ``len(ds)``, 0) and loops forever over one
    in the endless mode (not run); trainstack gives empty passes in strict mode and raises
    ``EmptyDataFlowError`` in the endless mode once ``MAX_EMPTY_PASSES`` passes in a row yielded
    nothing (a pass that yields nothing is skipped, as in tensorpack)."""
    assert tensorpack_value(tensorpack_outcomes, "empty_input_strict") == "AssertionError"
    assert run_trainstack("empty_input_strict") == [[], []]
    for cls in ("MultiProcessMapData", "MultiThreadMapData"):
        with closing(mapped(ts, cls, [], double)) as ds:
            with pytest.raises(ts.EmptyDataFlowError, match="no datapoint in 1000 passes in a row"):
                run_with_deadline(lambda: take(ds, 1), 120)  # a hang guard only


def test_tuples_arrive_as_lists_in_trainstack_and_as_tuples_in_tensorpack(tensorpack_outcomes):
    """Documented difference: msgpack between processes (tensorpack pickles), so a tuple, a
    datapoint or inside one, arrives as a list; what msgpack cannot carry (a set) is an error
    naming its path inside the datapoint."""
    assert tensorpack_value(tensorpack_outcomes, "tuples") == [observe(dp) for dp in TUPLES]
    assert run_trainstack("tuples") == [observe([1, [2, "x"]]), observe([{"pair": [3, 4]}])]
    with closing(mapped(ts, "MultiProcessMapData", [[{"ok": [1, {2, 3}]}]], double, strict=True,
                        buffer_size=1)) as ds:
        with pytest.raises(TypeError, match=r"datapoint\[0\]\['ok'\]\[1\]"):
            passes(ds, 1)


def test_a_map_func_that_raises_is_an_input_worker_error_in_trainstack(run_with_deadline):
    """Documented difference: tensorpack 0.11's ``MultiProcessMapData`` waits forever when
    ``map_func`` raises in a worker (not run through tensorpack); trainstack raises
    ``InputWorkerError`` with the worker's traceback within seconds, and the failed stream does
    not restart silently."""
    for strict in (True, False):
        with closing(mapped(ts, "MultiProcessMapData", ids(6), refuse_three, strict=strict, buffer_size=2)) as ds:
            with pytest.raises(ts.InputWorkerError, match=r"(?s)Traceback.*ValueError: map_func refuses datapoint 3"):
                run_with_deadline(lambda: take(ds, 12), 120)  # a hang guard only
            with pytest.raises(ts.InputError, match="reset_state"):
                take(ds, 1)


# --- MultiThreadMapData (threads: no fork, so both run here) --------------------------------------

def test_multi_thread_map_data_strict_twice_and_endless_with_one_thread():
    got = {}
    for name, lib in LIBS.items():
        with closing(mapped(lib, "MultiThreadMapData", ids(7), double, strict=True, buffer_size=3)) as ds:
            strict = [multiset(p) for p in passes(ds, 2)]
        with closing(mapped(lib, "MultiThreadMapData", ids(4), double, num=1, buffer_size=2)) as ds:
            endless = take(ds, 10)  # one thread: the order of RepeatedData(MapData(ds, f), -1)
        got[name] = strict, endless
    assert got["trainstack"] == got["tensorpack"]
    assert got["trainstack"][1] == [observe(double(dp)) for dp in ids(4)] * 2 + [observe(double(dp)) for dp in ids(2)]


def test_multi_thread_map_data_hands_map_func_a_copy_unlike_tensorpack():
    """Documented difference: trainstack's ``MultiThreadMapData`` hands ``map_func`` a shallow
    copy, as ``MapData`` does (and as a worker process gets one), so a ``map_func`` that mutates
    its argument leaves the source alone and every pass maps the original datapoints; tensorpack
    0.11's hands it the source's own lists, so the mutation accumulates in the source."""
    for name, lib in LIBS.items():
        source = [[k, 0] for k in range(4)]
        ds = lib.MultiThreadMapData(lib.DataFromList(source, shuffle=False), 2, increment_in_place, strict=True,
                                    buffer_size=2)
        ds.reset_state()
        with closing(ds):
            out = [sorted(int(dp[0]) for dp in ds) for _ in range(2)]
        if name == "trainstack":
            assert source == [[k, 0] for k in range(4)] and out == [[1, 2, 3, 4]] * 2
        else:
            assert source == [[k + 2, 0] for k in range(4)] and out == [[1, 2, 3, 4], [2, 3, 4, 5]]


def test_multi_thread_map_data_raises_the_map_funcs_error_instead_of_hanging(run_with_deadline):
    """Documented difference: in tensorpack 0.11 the thread dies and the consumer waits forever
    (not run through tensorpack); trainstack's raises ``map_func``'s own error."""
    with closing(mapped(ts, "MultiThreadMapData", ids(6), refuse_three, strict=True, buffer_size=2)) as ds:
        with pytest.raises(ValueError, match="refuses datapoint 3"):
            run_with_deadline(lambda: take(ds, 6), 120)  # a hang guard only


def test_msgpack_patched_by_tensorpack_does_not_change_what_workers_get():
    """tensorpack's import runs ``msgpack_numpy.patch()``, which replaced ``msgpack.packb`` in
    this process; trainstack's frames must still carry arrays as arrays (a worker once got
    msgpack-numpy's dicts) and never unpickle an object array a peer sends."""
    import msgpack

    from trainstack.dataflow import codec

    assert msgpack.Packer.__module__ == "msgpack_numpy", "tensorpack should have patched msgpack here"
    data = [[np.arange(3, dtype=np.int16)], [np.float32(2.5)]]
    with closing(mapped(ts, "MultiProcessMapData", data, lambda dp: [type(dp[0]).__name__], num=1,
                        strict=True, buffer_size=1)) as ds:
        assert passes(ds, 1)[0] == [observe(["ndarray"]), observe(["float32"])]
    # msgpack-numpy's layout of an object array is a pickle inside a map: decoded as that map
    hostile = msgpack.packb({"kind": "result", "datapoint": np.array([{"x": 1}], dtype=object)})
    frame = codec.decode_frame(hostile, peer="a test")
    assert isinstance(frame["datapoint"], dict) and frame["datapoint"][b"kind"] == b"O"
