"""MultiProcessDataFlow / MultiProcessInput: worker processes, msgpack frames, exactly once per pass."""
from __future__ import annotations

import multiprocessing as mp
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import types

import numpy as np
import pytest
import tensorflow as tf

from trainstack.dataflow import MultiProcessMapData, MultiProcessRunner
from trainstack.inputs import (
    FeedInput,
    InputError,
    InputReader,
    InputWorkerError,
    MultiProcessDataFlow,
    MultiProcessInput,
    QueueInput,
)
from trainstack.loop import Callback

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:  # worker processes import the dataflows by module name
    sys.path.insert(0, HERE)
import mp_dataflows  # noqa: E402

SIGNATURE = [tf.TensorSpec([], tf.int64, name="id"), tf.TensorSpec([2, 2], tf.float32, name="image")]


def pid_gone(pid: int) -> bool:
    """True when ``pid`` no longer runs (reaped, or a zombie waiting for its parent)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def assert_no_worker_left(workers) -> None:
    assert workers, "the test expected workers to have been started"
    live = {p.pid for p in mp.active_children()}
    for p in workers:
        assert p.exitcode is not None, f"worker {p.pid} is still running"
        assert p.pid not in live
        assert pid_gone(p.pid)


def epoch_ids(batches, steps_per_epoch):
    ids = [int(b[0][0]) for b in batches]
    return [ids[k:k + steps_per_epoch] for k in range(0, len(ids), steps_per_epoch)]


def test_each_datapoint_arrives_once_per_epoch_through_a_trainer():
    source = MultiProcessInput(mp_dataflows.IdFlow(12), num_workers=2, queue_size=4,
                               map_func=mp_dataflows.slow_if_odd)
    reader = InputReader(source, SIGNATURE)
    batches = reader.read(max_epoch=3)

    epochs = epoch_ids(batches, 12)
    assert len(epochs) == 3
    for ids in epochs:
        assert sorted(ids) == list(range(12))
    for tower_batch in batches:
        i, image = tower_batch[0]
        np.testing.assert_array_equal(image, np.full((2, 2), i, np.float32))
    assert source.size() == 12
    assert_no_worker_left(source.dataflow.workers)


def test_a_worker_running_ahead_does_not_leak_into_the_current_pass():
    # odd ids take 20 ms: worker 0 (even ids) finishes its passes long before worker 1
    with MultiProcessDataFlow(mp_dataflows.IdFlow(10), 2, map_func=mp_dataflows.slow_if_odd) as df:
        passes = [[int(dp[0]) for dp in df] for _ in range(3)]
        workers = df.workers
    for ids in passes:
        assert sorted(ids) == list(range(10))
    assert_no_worker_left(workers)


def test_an_abandoned_pass_is_skipped_by_the_next_iteration():
    with MultiProcessDataFlow(mp_dataflows.IdFlow(8), 2) as df:
        first = iter(df)
        next(first)
        next(first)
        assert sorted(int(dp[0]) for dp in df) == list(range(8))


def test_worker_factory_and_map_func_run_in_the_workers():
    with MultiProcessDataFlow(worker_factory=mp_dataflows.strided_flow, num_workers=3, size=12,
                              map_func=mp_dataflows.tag_with_pid) as df:
        assert len(df) == 12
        for _ in range(2):
            pass_ = list(df)
            assert sorted(int(dp[0]) for dp in pass_) == list(range(100, 112))
            pids = {int(dp[2]) for dp in pass_}
            assert pids == {p.pid for p in df.workers} and os.getpid() not in pids


def test_a_killed_worker_raises_and_training_stops(run_with_deadline):
    class KillWorker(Callback):
        def _trigger_step(self):
            if self.global_step == 3:
                os.kill(source.dataflow.workers[1].pid, signal.SIGKILL)

    source = MultiProcessInput(mp_dataflows.IdFlow(100_000, delay=0.002), num_workers=2, queue_size=2)
    reader = InputReader(source, SIGNATURE, keep=False)
    with pytest.raises(InputWorkerError, match=r"worker 1 of 2 \(pid \d+\) died .*SIGKILL"):
        run_with_deadline(lambda: reader.read(callbacks=[KillWorker()]), 120)  # a hang guard only
    assert reader.global_step < 1000  # it stopped soon after the kill, not at the end of the data
    assert_no_worker_left(source.dataflow.workers)


def test_an_error_in_a_worker_is_raised_with_its_traceback():
    source = MultiProcessInput(mp_dataflows.FailingFlow(20, fail_at=7), num_workers=2)
    reader = InputReader(source, SIGNATURE, keep=False)
    with pytest.raises(InputWorkerError) as info:
        reader.read()
    message = str(info.value)
    assert "ValueError: boom at datapoint 7" in message and "Traceback" in message
    assert_no_worker_left(source.dataflow.workers)


def test_workers_stop_when_training_crashes():
    class Crash(Callback):
        def _trigger_step(self):
            if self.global_step == 2:
                raise RuntimeError("the model failed")

    source = MultiProcessInput(mp_dataflows.IdFlow(1000), num_workers=2)
    with pytest.raises(RuntimeError, match="the model failed"):
        InputReader(source, SIGNATURE).read(callbacks=[Crash()])
    assert_no_worker_left(source.dataflow.workers)


@pytest.mark.parametrize("make", [
    lambda: MultiProcessDataFlow(mp_dataflows.IdFlow(100_000, delay=0.002), 2),
    lambda: MultiProcessRunner(mp_dataflows.IdFlow(100_000, delay=0.002), 1, 2),
    lambda: MultiProcessMapData(mp_dataflows.IdFlow(100_000), 2, mp_dataflows.slow_if_odd, buffer_size=4),
], ids=["MultiProcessDataFlow", "MultiProcessRunner", "MultiProcessMapData"])
def test_a_dead_worker_stops_its_siblings_before_the_error_is_raised(make):
    df = make()
    try:
        it = iter(df)
        next(it)
        victim, sibling = df.workers
        os.kill(victim.pid, signal.SIGKILL)
        with pytest.raises(InputWorkerError, match=rf"\(pid {victim.pid}\) died .*SIGKILL"):
            for _ in it:
                pass
        # by the time the caller sees the error: the sibling is joined, every pipe closed
        assert sibling.exitcode is not None and not sibling.is_alive()
        assert all(w.conn.closed for w in df._workers)
        assert [p.exitcode for p in df.workers] == [victim.exitcode, sibling.exitcode]
        assert mp.active_children() == []
        # a failed stream does not silently start over: it needs reset_state()
        with pytest.raises(InputError, match=r"stopped because an iteration failed .*reset_state\(\)"):
            next(iter(df))
        df.reset_state()
        next(iter(df))
    finally:
        df.close()
    assert mp.active_children() == []


@pytest.mark.parametrize("wrap", [FeedInput, QueueInput], ids=["FeedInput", "QueueInput"])
def test_inputs_stop_the_workers_of_their_dataflow_when_training_crashes(wrap):
    class Crash(Callback):
        def _trigger_step(self):
            if self.global_step == 2:
                raise RuntimeError("the model failed")

    df = MultiProcessDataFlow(mp_dataflows.IdFlow(1000), 2)
    with pytest.raises(RuntimeError, match="the model failed"):
        InputReader(wrap(df), SIGNATURE).read(callbacks=[Crash()])
    assert_no_worker_left(df.workers)


def test_unsendable_datapoints_and_unpicklable_dataflows_get_clear_errors():
    with MultiProcessDataFlow(mp_dataflows.IdFlow(4), 2, map_func=mp_dataflows.object_array) as df:
        with pytest.raises(InputWorkerError, match="object"):
            list(df)
    # a lambda goes to the workers by value (cloudpickle); a lock cannot go at all
    with MultiProcessDataFlow(mp_dataflows.IdFlow(4), 2, map_func=lambda dp: [dp[0] * 10]) as df:
        assert sorted(dp[0] for dp in df) == [0, 10, 20, 30]
    lock = threading.Lock()
    with pytest.raises(InputError, match="map_func must be picklable .*pickling failed with TypeError"):
        MultiProcessDataFlow(mp_dataflows.IdFlow(4), 2, map_func=lambda dp: (lock, dp)[1]).reset_state()


def test_a_dataflow_the_workers_cannot_import_gets_a_clear_error(monkeypatch):
    # a class whose module exists only in this process (like one defined in an interactive session)
    module = types.ModuleType("only_in_the_trainer")
    module.Flow = type("Flow", (mp_dataflows.IdFlow,), {"__module__": "only_in_the_trainer"})
    monkeypatch.setitem(sys.modules, "only_in_the_trainer", module)
    with MultiProcessDataFlow(module.Flow(4), 2) as df:
        with pytest.raises(InputWorkerError, match=r"(?s)worker \d of 2 .* failed.*only_in_the_trainer"):
            list(df)


def test_bad_arguments():
    with pytest.raises(ValueError, match="not both"):
        MultiProcessDataFlow(mp_dataflows.IdFlow(4), worker_factory=mp_dataflows.strided_flow)
    with pytest.raises(ValueError, match="not neither"):
        MultiProcessDataFlow()
    with pytest.raises(ValueError, match="num_workers"):
        MultiProcessDataFlow(mp_dataflows.IdFlow(4), 0)
    with pytest.raises(ValueError, match="start_method"):
        MultiProcessDataFlow(mp_dataflows.IdFlow(4), start_method="teleport")
    with pytest.raises(TypeError, match="size="):
        len(MultiProcessDataFlow(worker_factory=mp_dataflows.strided_flow))


def test_workers_exit_when_the_trainer_process_is_killed():
    code = textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {HERE!r})
        import mp_dataflows
        from trainstack.inputs.multiprocess import MultiProcessDataFlow
        df = MultiProcessDataFlow(mp_dataflows.IdFlow(10**6, delay=0.01), 2)
        next(iter(df))
        print(*[p.pid for p in df.workers], flush=True)
        time.sleep(60)
    """)
    with subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}) as proc:
        try:
            pids = [int(p) for p in proc.stdout.readline().split()]
            assert len(pids) == 2 and not any(pid_gone(p) for p in pids)
        finally:
            proc.kill()
    deadline = time.monotonic() + 10
    while not all(pid_gone(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert all(pid_gone(p) for p in pids)
