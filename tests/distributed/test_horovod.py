"""HorovodTrainer with 2 processes on localhost over Gloo, started by horovodrun.

One 2-process run of ``hvd_job.py`` (module fixture) is checked against a
single-process SimpleTrainer; a second run kills rank 1 mid-training. Skipped
without Horovod: build it with ``python scripts/install_horovod.py``.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("horovod.tensorflow", exc_type=ImportError,
                    reason="Horovod is not installed (or not importable): run scripts/install_horovod.py")

import importlib.util  # noqa: E402

import keras  # noqa: E402
import tensorflow as tf  # noqa: E402

from trainstack.callbacks import JSONWriter  # noqa: E402
from trainstack.distributed import HorovodTrainer  # noqa: E402
from trainstack.inputs import FeedInput  # noqa: E402
from trainstack.towers import CheckpointInit, SimpleTrainer  # noqa: E402

JOB = Path(__file__).with_name("hvd_job.py")
_spec = importlib.util.spec_from_file_location("hvd_job", JOB)
job = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(job)

EPOCHS, BATCHES = 2, 8          # 8 batches of 16 shared by 2 ranks: 4 steps per epoch
GLOO_TIMEOUT_S = 20             # horovodrun --gloo-timeout-seconds: a hung peer is detected after this
DEAD_RANK_BOUND_S = 10          # a survivor must fail within this after its peer died (measured: 0.1 s)
JOB_ENV = {"TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": ""}  # quiet TF; ranks on the CPU
HUNG_GLOO_TIMEOUT_S = 8         # the gloo timeout of the hung-rank test; the survivor fails after it


def horovodrun(out: Path, *job_args: str, np_: int = 2, timeout: float = 180,
               gloo_timeout_s: int = GLOO_TIMEOUT_S) -> subprocess.CompletedProcess:
    """``horovodrun -np 2 -H localhost:2 --gloo python hvd_job.py --out OUT ...``."""
    cmd = [sys.executable, "-c", "from horovod.runner.launch import run_commandline; run_commandline()",
           "-np", str(np_), "-H", f"localhost:{np_}", "--gloo", "--gloo-timeout-seconds", str(gloo_timeout_s),
           sys.executable, str(JOB), "--out", str(out), *job_args]
    env = {**os.environ, **JOB_ENV}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)


def start_ranks(out: Path, *job_args: str, np_: int = 2,
                gloo_timeout_s: int = GLOO_TIMEOUT_S) -> tuple[Any, list[subprocess.Popen]]:
    """Start ``np_`` ranks of hvd_job.py the way horovodrun does (Horovod's rendezvous server and
    its ``HOROVOD_*`` environment), but without horovodrun: horovodrun terminates every rank as
    soon as one fails, so under it a survivor's own failure cannot be observed. Returns the
    rendezvous server (stop it once the ranks are done) and the ranks' processes."""
    from horovod.runner.common.util.hosts import get_host_assignments, parse_hosts  # noqa: PLC0415
    from horovod.runner.gloo_run import create_run_env_vars, create_slot_env_vars  # noqa: PLC0415
    from horovod.runner.http.http_server import RendezvousServer  # noqa: PLC0415

    server = RendezvousServer()
    port = server.start()
    plan = get_host_assignments(parse_hosts(f"localhost:{np_}"), np_)
    server.init(plan)
    env = {**os.environ, **JOB_ENV, "PYTHONUNBUFFERED": "1",
           "HOROVOD_GLOO_TIMEOUT_SECONDS": str(gloo_timeout_s),
           **{k: str(v) for k, v in create_run_env_vars("127.0.0.1", ["lo"], port).items()}}
    procs = []
    for slot in plan:  # each rank's output goes to OUT/rank<r>.log (a pipe nobody reads could fill)
        with open(out / f"rank{slot.rank}.log", "w") as log:
            procs.append(subprocess.Popen([sys.executable, str(JOB), "--out", str(out), *job_args],
                                          env={**env, **create_slot_env_vars(slot)}, stdout=log,
                                          stderr=subprocess.STDOUT))
    return server, procs


@pytest.fixture(scope="module")
def run(once_per_session) -> Path:
    """The 2-process run, made once per test session even under pytest-xdist."""
    def make(out: Path) -> None:
        proc = horovodrun(out, "--epochs", str(EPOCHS), "--batches", str(BATCHES), "--broadcast-every-epoch")
        assert proc.returncode == 0, (f"horovodrun failed ({proc.returncode}):\n{proc.stdout[-4000:]}\n"
                                      f"{proc.stderr[-4000:]}")

    return once_per_session("hvd_run", make)


def rank_weights(out: Path, rank: int) -> dict[str, list[np.ndarray]]:
    data = np.load(out / f"rank{rank}.npz")
    return {what: [data[f"{what}_{i}"] for i in range(2)] for what in ("init", "step1", "final")}


def report(out: Path, rank: int) -> dict:
    return json.loads((out / f"rank{rank}.json").read_text())


def test_one_process_trains_exactly_like_simple_trainer():
    """Without horovodrun, Horovod runs one process (size 1): the same updates as SimpleTrainer."""
    batches = job.make_batches(3)

    def train(trainer):
        keras.utils.set_random_seed(7)
        model = job.TinyClassifier(hidden=3)
        trainer.setup_graph(model.get_input_signature(), batches, model.build_graph, model.get_optimizer)
        trainer.train(callbacks=[], monitors=[], steps_per_epoch=3, max_epoch=1)
        return job.weights(model)

    hvd_trainer = HorovodTrainer(compression="fp16")
    assert (hvd_trainer.rank, hvd_trainer.size, hvd_trainer.is_chief) == (0, 1, True)
    for a, b in zip(train(hvd_trainer), train(SimpleTrainer())):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("kwargs, error", [({"compression": "gzip"}, ValueError), ({"average": 1}, TypeError),
                                           ({"stall_shutdown_s": 0}, ValueError)])
def test_bad_arguments_are_clear_errors(kwargs, error):
    with pytest.raises(error, match="HorovodTrainer"):
        HorovodTrainer(**kwargs)


def test_the_initial_broadcast_gives_every_rank_rank0s_weights(run):
    # the ranks create their weights with different seeds; only the broadcast makes them equal
    r0, r1 = rank_weights(run, 0), rank_weights(run, 1)
    for a, b in zip(r0["init"], r1["init"]):
        np.testing.assert_array_equal(a, b)


def test_first_step_equals_a_single_process_step_on_both_batches(run):
    """Rank r's first batch is batch r; with average=True the all-reduced step is SimpleTrainer's on
    the 32 examples of batches 0 and 1 concatenated (equal per-rank batches), up to float32 rounding."""
    r0 = rank_weights(run, 0)
    batches = job.make_batches(BATCHES)
    both = (np.concatenate([batches[0][0], batches[1][0]]), np.concatenate([batches[0][1], batches[1][1]]))
    model = job.TinyClassifier()
    trainer = SimpleTrainer()
    trainer.setup_graph(model.get_input_signature(), FeedInput([both]), model.build_graph, model.get_optimizer)
    for var, value in zip((model.fc.kernel, model.fc.bias), r0["init"]):
        var.assign(value)
    trainer.train(callbacks=[], monitors=[], steps_per_epoch=1, max_epoch=1)
    expected = job.weights(model)
    for got, want, init in zip(r0["step1"], expected, r0["init"]):
        assert not np.allclose(want, init), "the reference step did not change the weights"
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_weights_identical_on_both_ranks_after_training(run):
    r0, r1 = rank_weights(run, 0), rank_weights(run, 1)
    for a, b, init in zip(r0["final"], r1["final"], r0["init"]):
        assert not np.allclose(a, init)
        np.testing.assert_array_equal(a, b)
    assert report(run, 0)["steps"] == report(run, 1)["steps"] == EPOCHS * BATCHES // 2


def test_only_rank0_writes_checkpoints_and_stats(run):
    logs = run / "logs"
    r0, r1 = report(run, 0), report(run, 1)
    # both ranks set the same logger directory; the trainer drops rank 1's file writers
    assert {"JSONWriter", "TFEventWriter"} <= set(r0["monitors"])
    assert not {"JSONWriter", "TFEventWriter"} & set(r1["monitors"])
    assert "ModelSaver" in r0["callbacks"] and "ModelSaver" not in r1["callbacks"]
    assert "BroadcastVariables" in r0["callbacks"] and "BroadcastVariables" in r1["callbacks"]
    records = JSONWriter.load_existing_json(str(logs))
    steps = [r["global_step"] for r in records]
    assert steps == sorted(set(steps)), f"stats.jsonl has records from more than one writer: {steps}"
    assert records[-1]["epoch_num"] == EPOCHS
    assert [r["epoch_num"] for r in records if "weights_sum" in r] == list(range(1, EPOCHS + 1))
    assert len(list(logs.glob("events.out.tfevents.*"))) == 1  # rank 0's, opened by its first write
    checkpoints = sorted(p.name for p in logs.glob("model-*.index"))
    assert checkpoints == [f"model-{e * BATCHES // 2}.index" for e in range(1, EPOCHS + 1)]


def test_checkpoint_of_the_2_process_run_restores_into_simple_trainer(run):
    model = job.TinyClassifier()
    trainer = SimpleTrainer()
    trainer.setup_graph(model.get_input_signature(), FeedInput(job.make_batches(2)), model.build_graph,
                        model.get_optimizer)
    trainer.setup_callbacks([], [])
    trainer.initialize(session_init=CheckpointInit(tf.train.latest_checkpoint(str(run / "logs"))))
    for got, want in zip(job.weights(model), rank_weights(run, 0)["final"]):
        np.testing.assert_array_equal(got, want)
    assert int(trainer.optimizer.iterations.numpy()) == EPOCHS * BATCHES // 2


def test_a_killed_rank_makes_the_other_fail_within_a_bound(tmp_path):
    """Rank 1 SIGKILLs itself at step 3; rank 0, left to itself (no launcher to end it), must fail
    with an error of its own within DEAD_RANK_BOUND_S instead of hanging in its next all-reduce."""
    server, (survivor, victim) = start_ranks(tmp_path, "--epochs", "100000", "--batches", str(BATCHES),
                                   "--kill-rank", "1", "--kill-step", "3")
    try:
        victim.wait(timeout=120)
        survivor.wait(timeout=DEAD_RANK_BOUND_S + 30)
    finally:
        for proc in (survivor, victim):
            proc.kill()
        server.stop()
    output = (tmp_path / "rank0.log").read_text()[-3000:]
    assert victim.returncode == -9
    assert survivor.returncode not in (0, None), f"rank 0 did not fail:\n{output}"
    killed = json.loads((tmp_path / "killed.json").read_text())
    result = report(tmp_path, 0)
    assert "error" in result, f"rank 0 ended without an error: {result}\n{output}"
    assert result["error"]["type"] == "HorovodShutdownError", result["error"]
    assert "rank 0 of 2: Horovod shut down" in result["error"]["message"]
    assert "which waits in Horovod's allreduce in the step's gradient aggregation" in result["error"]["message"]
    waited = result["error"]["time"] - killed["time"]
    assert 0 <= waited < DEAD_RANK_BOUND_S, f"rank 0 failed {waited:.1f}s after rank 1 died"
    assert 3 <= result["steps"] < 100000 * BATCHES // 2


@pytest.mark.parametrize("sig", ["TERM", "INT"])
def test_a_signal_on_one_rank_stops_every_rank_after_the_same_step_and_the_chief_saves_it(tmp_path, sig):
    """Rank 1 alone gets SIGTERM (Ctrl-C) at step 3: its request rides in step 4's all-reduce,
    so both ranks stop after step 4, rank 0 saves that step, and rank 1 exits with its signal's
    status, rank 0 with SIGTERM's (the stop came from elsewhere), none with a Horovod error (a
    rank stopping alone would leave the other hanging in its next all-reduce)."""
    from trainstack.callbacks import load_loop_state  # noqa: PLC0415

    server, procs = start_ranks(tmp_path, "--epochs", "100000", "--batches", str(BATCHES),
                                "--kill-rank", "1", "--kill-step", "3", "--kill-signal", sig)
    try:
        codes = [proc.wait(timeout=120) for proc in procs]
    finally:
        for proc in procs:
            proc.kill()
        server.stop()
    status = 128 + {"TERM": 15, "INT": 2}[sig]
    logs = [(tmp_path / f"rank{r}.log").read_text()[-3000:] for r in range(2)]
    assert codes == [128 + 15, status], logs
    results = [report(tmp_path, r) for r in range(2)]
    assert [r["steps"] for r in results] == [4, 4], results
    assert not any("error" in r for r in results), results
    assert [r["interrupted"]["exit_code"] for r in results] == [128 + 15, status], results
    assert load_loop_state(tmp_path / "logs")["global_step"] == 4
    assert "received by another process" in logs[0]
    # one numbering (the checkpoint's) and the hint that applies to the signal sent
    for log in logs:
        assert set(re.findall(r"global step (\d+)", log)) <= {"4"}, log
    assert ("Ctrl-C again" in logs[1]) == (sig == "INT")


def test_a_hung_rank_makes_the_other_end_by_its_watchdog_naming_horovods_allreduce(tmp_path):
    """Rank 1 stops (SIGSTOP) at step 3 without dying; with a Gloo timeout of 10 minutes, rank 0's
    StepWatchdog (2 s) ends it (status 1, the stacks) naming the allreduce its step waits in."""
    server, (survivor, victim) = start_ranks(tmp_path, "--epochs", "100000", "--batches", str(BATCHES),
                                   "--kill-rank", "1", "--kill-step", "3", "--kill-signal", "STOP",
                                   "--watchdog", "2", gloo_timeout_s=600)
    try:
        survivor.wait(timeout=150)
    finally:
        for proc in (survivor, victim):
            proc.kill()
            proc.wait()
        server.stop()
    output = (tmp_path / "rank0.log").read_text()
    assert survivor.returncode == 1, output[-3000:]
    assert ("StepWatchdog(2 s): global step 4 (epoch 1) has not finished after 2 s, the limit. A step of "
            "HorovodTrainer waits in Horovod's allreduce in the step's gradient aggregation across its 2 "
            "ranks") in output, output[-3000:]
    assert "[MainThread] (most recent call first)" in output


@pytest.mark.slow
def test_a_hung_rank_makes_the_other_fail_after_the_gloo_timeout(tmp_path):
    """A rank that stops (SIGSTOP) without dying: its peer's collectives time out after
    ``--gloo-timeout-seconds`` and the peer fails; horovodrun then ends the job."""
    proc = horovodrun(tmp_path, "--epochs", "100000", "--batches", str(BATCHES), "--kill-rank", "1",
                      "--kill-step", "3", "--kill-signal", "STOP", gloo_timeout_s=HUNG_GLOO_TIMEOUT_S,
                      timeout=120)
    assert proc.returncode != 0
    stopped = json.loads((tmp_path / "killed.json").read_text())
    survivor = report(tmp_path, 0)
    assert "error" in survivor, f"rank 0 ended without an error: {survivor}"
    assert survivor["error"]["type"] == "HorovodShutdownError", survivor["error"]
    waited = survivor["error"]["time"] - stopped["time"]
    assert HUNG_GLOO_TIMEOUT_S - 1 <= waited < HUNG_GLOO_TIMEOUT_S + DEAD_RANK_BOUND_S, (
        f"rank 0 failed {waited:.1f}s after rank 1 hung (gloo timeout {HUNG_GLOO_TIMEOUT_S}s)")
