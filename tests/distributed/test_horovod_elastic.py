"""ElasticHorovodTrainer under horovodrun's elastic driver (Gloo), on localhost.

One run of ``elastic_job.py`` (the ``run`` fixture) with a host discovery script
that prints the file DIR/hosts, which the test rewrites while the job trains:
2 -> 1 (rank 0's host removed) -> 2 workers, then ``kill -9`` of rank 0 mid-epoch,
after which the other worker becomes rank 0 and finishes alone.

Each worker records, after every step, the index of the datapoint it trained on;
the checks read those records: the planned number of steps is reached, steps
redone after the failure <= commit_every, and the steps of the final trajectory
consumed the stream of the dataflow's passes exactly once, in order (reads: at
least once). Skipped without Horovod: ``python scripts/install_horovod.py``.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("horovod.tensorflow", exc_type=ImportError,
                    reason="Horovod is not installed (or not importable): run scripts/install_horovod.py")

import tensorflow as tf  # noqa: E402

from trainstack.callbacks import load_loop_state  # noqa: E402
from trainstack.distributed import DEFAULT_COMMIT_EVERY, ElasticHorovodTrainer  # noqa: E402
from trainstack.inputs import FeedInput  # noqa: E402

JOB = Path(__file__).with_name("elastic_job.py")
JOB_ENV = {"TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": "", "PYTHONUNBUFFERED": "1"}
EPOCHS, STEPS, BATCHES = 4, 10, 20       # 40 steps; at 2 workers an epoch is one pass of the 20 batches
RUN_TIMEOUT_S = 150                      # a whole horovodrun job, on a busy 2-core machine
COMMIT_EVERY = 3


def start_elastic(out: Path, hosts: str, *job_args: str, np_: int = 2, min_np: int = 1,
                  max_np: int = 2) -> subprocess.Popen:
    """``horovodrun -np 2 --min-np 1 --max-np 2 --host-discovery-script OUT/discover.sh ...``, started
    in the background (output in OUT/horovodrun.log); the discovery script prints OUT/hosts."""
    (out / "hosts").write_text(hosts + "\n")
    script = out / "discover.sh"
    script.write_text(f"#!/bin/sh\ncat {out / 'hosts'}\n")
    script.chmod(0o755)
    cmd = [sys.executable, "-c", "from horovod.runner.launch import run_commandline; run_commandline()",
           "-np", str(np_), "--min-np", str(min_np), "--max-np", str(max_np),
           "--host-discovery-script", str(script), "--network-interfaces", "lo",
           "--gloo-timeout-seconds", "20", "--elastic-timeout", "60", "--start-timeout", "60",
           sys.executable, str(JOB), "--out", str(out), "--epochs", str(EPOCHS), "--steps", str(STEPS),
           "--batches", str(BATCHES), *job_args]
    log = open(out / "horovodrun.log", "w")
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **JOB_ENV},
                            start_new_session=True)


def records(out: Path) -> list[dict]:
    """Every step record of every worker, in time order."""
    found = []
    for path in out.glob("steps-*.jsonl"):
        for line in path.read_text().splitlines():
            if line.strip():
                try:
                    found.append(json.loads(line))
                except json.JSONDecodeError:  # a line being written
                    pass
    return sorted(found, key=lambda r: r["t"])


def wait_for(proc: subprocess.Popen, out: Path, what: str, condition: Callable[[list[dict]], bool],
             timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition(records(out)):
            return
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    log = (out / "horovodrun.log").read_text()[-6000:]
    proc.kill()
    pytest.fail(f"the job did not reach '{what}' (exit {proc.poll()}):\n{log}")


def finish(proc: subprocess.Popen, out: Path) -> None:
    """Wait for horovodrun, which must succeed."""
    try:
        code = proc.wait(timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        code = "timeout"
    log = (out / "horovodrun.log").read_text()
    assert code == 0, f"horovodrun ended with {code}:\n{log[-8000:]}"


def trajectory(recs: list[dict]) -> dict[int, list[dict]]:
    """The steps the final model went through: for each global step, the records of its last
    attempt (the last ``size`` records of that step: one per rank of that attempt)."""
    by_step: dict[int, list[dict]] = defaultdict(list)
    for r in recs:
        by_step[r["step"]].append(r)
    final = {}
    for step, rs in by_step.items():
        last = rs[-rs[-1]["size"]:]
        assert sorted(r["rank"] for r in last) == list(range(last[-1]["size"])), (step, rs)
        final[step] = last
    return final


def check_datapoints_exactly_once(recs: list[dict]) -> int:
    """The final trajectory's steps, in order and by rank, fed the stream 0, 1, 2, ... of the
    dataflow's passes (datapoint g is batch g % BATCHES): each exactly once. Returns its length."""
    steps = trajectory(recs)
    assert sorted(steps) == list(range(1, EPOCHS * STEPS + 1))
    fed = [r["idx"] for s in sorted(steps) for r in sorted(steps[s], key=lambda r: r["rank"])]
    assert fed == [g % BATCHES for g in range(len(fed))], fed
    return len(fed)


def redone_steps(recs: list[dict]) -> list[int]:
    """For each rollback a worker went through: how many finished steps it did again."""
    redone = []
    by_pid: dict[int, list[int]] = defaultdict(list)
    for r in recs:
        by_pid[r["pid"]].append(r["step"])
    for seq in by_pid.values():
        for before, after in zip(seq, seq[1:]):
            if after <= before:
                redone.append(before - after + 1)
    return redone


@pytest.fixture(scope="module")
def run(once_per_session) -> dict:
    """The one elastic job all the checks below read (made once per test session, even under
    pytest-xdist): 2 workers (hosts ``localhost`` and ``127.0.0.1``, both this machine) -> 1
    (rank 0's host leaves the discovery output; the other process becomes rank 0) -> 2 (the host
    comes back: a new process receives the state) -> ``kill -9`` of rank 0 mid-epoch -> 1 (the
    survivor becomes rank 0 and finishes). The driver blacklists the host of a failed worker,
    hence two host names: one would end the job."""
    def make(out: Path) -> None:
        proc = start_elastic(out, "localhost:1\n127.0.0.1:1", "--commit-every", str(COMMIT_EVERY),
                             "--step-sleep", "0.15")
        wait_for(proc, out, "step 4 at 2 workers", lambda rs: any(r["step"] >= 4 and r["size"] == 2 for r in rs))
        # the host of rank 0 leaves (the driver orders the hosts as it likes): the other process
        # becomes rank 0 and takes over the chief-only callbacks from the commit
        chief_host = next(r["host"] for r in reversed(records(out)) if r["rank"] == 0)
        (out / "hosts").write_text(f"{'127.0.0.1' if chief_host == 'localhost' else 'localhost'}:1\n")
        wait_for(proc, out, "2 steps at 1 worker", lambda rs: sum(r["size"] == 1 for r in rs) >= 2)
        (out / "hosts").write_text("localhost:1\n127.0.0.1:1\n")

        def regrown_mid_epoch(rs: list[dict]) -> bool:
            last_single = max(r["t"] for r in rs if r["size"] == 1)
            again = [r for r in rs if r["size"] == 2 and r["t"] > last_single]
            return len(again) >= 4 and 2 <= again[-1]["step"] % STEPS <= 7

        wait_for(proc, out, "2 workers again, mid-epoch", regrown_mid_epoch)
        victim = next(r for r in reversed(records(out)) if r["rank"] == 0)
        os.kill(victim["pid"], signal.SIGKILL)
        killed = {"pid": victim["pid"], "step": max(r["step"] for r in records(out)), "time": time.time()}
        (out / "killed-by-test.json").write_text(json.dumps(killed))
        finish(proc, out)

    out = once_per_session("horovod_elastic_run", make)
    return {"out": out, "results": [json.loads(p.read_text()) for p in out.glob("result-*.json")],
            "records": records(out), "killed": json.loads((out / "killed-by-test.json").read_text())}


def test_the_run_reaches_the_planned_steps_through_2_1_2_1_workers(run):
    sizes = [r["size"] for r in run["records"]]
    changes = [a for a, b in zip(sizes, sizes[1:] + [None]) if a != b]
    assert changes == [2, 1, 2, 1], changes
    assert len(run["results"]) == 1  # the survivor; the killed and the removed processes wrote none
    survivor = run["results"][0]
    assert survivor["pid"] != run["killed"]["pid"] and (survivor["rank"], survivor["size"]) == (0, 1)
    assert survivor["global_step"] == EPOCHS * STEPS


def test_every_datapoint_exactly_once_in_the_final_trajectory(run):
    """The final trajectory's steps fed the stream 0, 1, 2... once each; the reads beyond it are
    the rolled-back steps' (at least once in reads, at most commit_every x 2 workers more)."""
    consumed = check_datapoints_exactly_once(run["records"])
    assert consumed <= len(run["records"]) <= consumed + COMMIT_EVERY * 2


def test_a_failure_redoes_at_most_commit_every_steps(run):
    # the survivor's account: one rollback (the kill; resizes roll nothing back), from its last
    # finished step to the last commit
    rollbacks = [(e["from_step"], e["global_step"]) for e in run["results"][0]["events"] if e["kind"] == "rollback"]
    assert len(rollbacks) == 1, rollbacks
    lost = rollbacks[0][0] - rollbacks[0][1]
    assert 0 <= lost <= COMMIT_EVERY
    # the records' account: the survivor made those steps again (none, when the kill came
    # right after a commit), and no worker redid any other step
    assert redone_steps(run["records"]) == ([lost] if lost else []), (rollbacks, redone_steps(run["records"]))


def test_chief_only_callbacks_carry_on_when_rank0_leaves_or_dies(run):
    """The counter (chief-only, with state) saw each step of the final trajectory once, across
    two changes of rank 0 (its host removed, then its process killed); ModelSaver and
    JSONWriter wrote the last step on the last rank 0."""
    chiefs = [r["pid"] for r in run["records"] if r["rank"] == 0]
    assert len(dict.fromkeys(chiefs)) == 3, "rank 0 should have been three processes in turn"
    survivor = run["results"][0]
    assert survivor["chief_count"] == EPOCHS * STEPS
    logs = run["out"] / "logs"
    assert load_loop_state(logs)["global_step"] == EPOCHS * STEPS
    stats = [json.loads(line) for line in (logs / "stats.jsonl").read_text().splitlines()]
    assert stats[-1]["global_step"] == EPOCHS * STEPS


def test_the_resize_hook_scales_the_learning_rate(run):
    survivor = run["results"][0]
    resizes = [(e["old_size"], e["new_size"]) for e in survivor["events"] if e["kind"] == "resize"]
    assert resizes[-1] == (2, 1)
    assert survivor["lr"] == pytest.approx(0.1)  # 0.2 at 2 workers, 0.1 at 1


# -- in this process (one rank, no driver) ----------------------------------------------------------
def test_one_process_without_driver_trains_and_commits():
    """Started without horovodrun, the trainer is a 1-process Horovod job: it trains through the
    elastic loop (commits included) to the planned step, feeding the stream in order."""
    import elastic_job as job  # noqa: PLC0415 - the test folder is on sys.path (conftest.py)

    trainer = ElasticHorovodTrainer(commit_every=2)
    assert (trainer.rank, trainer.size, trainer.is_chief, trainer.under_elastic_driver) == (0, 1, True, False)
    model = job.IndexedClassifier()
    trainer.setup_graph(model.get_input_signature(), job.make_batches(5), model.build_graph, model.get_optimizer)
    seen = []

    class Seen(job.Callback):
        _chief_only = False

        def _trigger_step(self) -> None:
            seen.append(int(job.SEEN.numpy()))

    trainer.train(callbacks=[Seen()], monitors=[], steps_per_epoch=3, max_epoch=2)
    assert trainer.global_step == 6 and seen == [0, 1, 2, 3, 4, 0]
    commits = [e["global_step"] for e in trainer.elastic_events if e["kind"] == "commit"]
    assert commits == [2, 3, 5, 6]  # every 2 steps, and at each epoch's end
    assert trainer.input.position == 6


def test_bad_arguments_are_clear_errors():
    with pytest.raises(ValueError, match="commit_every"):
        ElasticHorovodTrainer(commit_every=0)
    trainer = ElasticHorovodTrainer()
    assert trainer.commit_every == DEFAULT_COMMIT_EVERY
    spec = [tf.TensorSpec([None], tf.float32, "x")]
    with pytest.raises(TypeError, match="takes a dataflow"):
        trainer.setup_graph(spec, FeedInput([(np.zeros(1, "float32"),)]), lambda x: tf.reduce_sum(x), None)




def test_launch_train_with_config_gives_the_elastic_trainer_its_own_input_for_a_dataflow(logger_dir):
    """``launch_train_with_config(TrainConfig(dataflow=df), ElasticHorovodTrainer())`` trains, fed by the
    trainer's own ElasticFeedInput (the trainer's ``default_input``; not a QueueInput, which it
    refuses), through the stream in order; ``data=`` an InputSource is refused, naming the dataflow."""
    import elastic_job as job  # noqa: PLC0415 - the test folder is on sys.path (conftest.py)

    from trainstack.distributed.elastic_input import ElasticFeedInput  # noqa: PLC0415
    from trainstack.towers import TrainConfig, launch_train_with_config  # noqa: PLC0415

    seen = []

    class Seen(job.Callback):
        _chief_only = False

        def _trigger_step(self) -> None:
            seen.append(int(job.SEEN.numpy()))

    model = job.IndexedClassifier()
    trainer = ElasticHorovodTrainer(commit_every=2)
    launch_train_with_config(TrainConfig(model=model, dataflow=job.make_batches(5), callbacks=[Seen()],
                                         monitors=[], extra_callbacks=[], steps_per_epoch=3, max_epoch=2),
                             trainer)
    assert isinstance(trainer.input, ElasticFeedInput) and trainer.input.placement_of(trainer)
    assert trainer.global_step == 6 and seen == [0, 1, 2, 3, 4, 0] and trainer.input.position == 6
    assert [e["global_step"] for e in trainer.elastic_events if e["kind"] == "commit"] == [2, 3, 5, 6]

    other = ElasticHorovodTrainer()
    with pytest.raises(TypeError, match="takes a dataflow .* got the InputSource"):
        launch_train_with_config(TrainConfig(model=job.IndexedClassifier(), data=FeedInput(job.make_batches(5)),
                                             max_epoch=1), other)
