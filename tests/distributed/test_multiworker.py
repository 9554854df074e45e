"""DistributedTrainerReplicated with 2 local worker processes (MultiWorkerMirroredStrategy, CPU).

One launcher run (``python -m trainstack.distributed.launch -n 2 mw_job.py``)
is shared by the tests of the trained result; the dead-worker test starts its
own two processes without the launcher (the launcher would stop the survivor
itself). The first step is compared with SimpleTrainer on the two workers'
first batches concatenated, within RTOL/ATOL of mw_model (1e-5 relative,
1e-6 absolute: the same float32 sums in another order).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from mw_model import ATOL, RTOL, Classifier, first_batches, weights  # noqa: E402

from trainstack.distributed import ClusterSpec, local_cluster  # noqa: E402
from trainstack.inputs import TFDatasetInput  # noqa: E402
from trainstack.towers import SimpleTrainer, SmartInit  # noqa: E402

JOB = os.path.join(HERE, "mw_job.py")
STEPS, EPOCHS = 10, 2


def _env() -> dict[str, str]:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONUNBUFFERED="1")
    env.pop("TF_CONFIG", None)
    return env


@pytest.fixture(scope="module")
def run(once_per_session) -> str:
    """The launcher run's output directory; made once per test session."""
    return str(once_per_session("multiworker_run", lambda out: _launch(str(out))))


def _launch(out: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "trainstack.distributed.launch", "-n", "2", "--timeout", "150", JOB,
         "--out", out, "--steps", str(STEPS), "--epochs", str(EPOCHS)],
        env=_env(), capture_output=True, text=True, timeout=200)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert "[worker0] worker0 done, chief=True" in proc.stdout
    assert "[worker1] worker1 done, chief=False" in proc.stdout
    return out


def _load(out: str, name: str) -> list[np.ndarray]:
    with np.load(os.path.join(out, f"{name}.npz")) as f:
        return [f[f"arr_{i}"] for i in range(len(f.files))]


def _simple_trainer(model: Classifier, x: np.ndarray, y: np.ndarray) -> SimpleTrainer:
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(len(x)).repeat()
    trainer = SimpleTrainer()
    trainer.setup_graph(model.get_input_signature(), TFDatasetInput(dataset), model.build_graph,
                        model.get_optimizer)
    return trainer


def test_first_step_equals_one_process_on_both_batches(run: str) -> None:
    init0, init1 = _load(run, "worker0_init"), _load(run, "worker1_init")
    for a, b in zip(init0, init1):
        np.testing.assert_array_equal(a, b)  # worker 0's initial values were broadcast
    model = Classifier()
    trainer = _simple_trainer(model, *first_batches(2))
    for layer_var, value in zip([model.hidden.kernel, model.hidden.bias, model.logits.kernel,
                                 model.logits.bias], init0):
        layer_var.assign(value)
    trainer.train_op()
    expected = weights(model)[:4]  # the trained variables (the running mean is per worker)
    for name in ("worker0_step1", "worker1_step1"):
        got = _load(run, name)[:4]
        for e, g, i in zip(expected, got, init0):
            assert not np.allclose(g, i), "the first step changed nothing"
            np.testing.assert_allclose(g, e, rtol=RTOL, atol=ATOL)


def test_weights_identical_on_both_workers(run: str) -> None:
    final0, final1 = _load(run, "worker0_final"), _load(run, "worker1_final")
    assert len(final0) == 5
    for a, b, i in zip(final0, final1, _load(run, "worker0_init")):
        np.testing.assert_array_equal(a, b)  # the running mean too: broadcast from the chief
        assert not np.allclose(a, i)
    # each worker updated its running mean from its own shard during an epoch
    assert _load(run, "worker0_step1")[4] != _load(run, "worker1_step1")[4]


def test_only_the_chief_writes_checkpoints_and_stats(run: str) -> None:
    chief, other = os.listdir(os.path.join(run, "worker0")), os.listdir(os.path.join(run, "worker1"))
    assert "stats.jsonl" in chief and "checkpoint" in chief
    assert any(f.startswith("events.out.tfevents") for f in chief)  # opened by its first write
    with open(os.path.join(run, "worker0", "stats.jsonl")) as f:
        assert [json.loads(line)["global_step"] for line in f if "weights_sum" in line] == [
            STEPS * e for e in range(1, EPOCHS + 1)]
    assert tf.train.latest_checkpoint(os.path.join(run, "worker0")).endswith(f"model-{STEPS * EPOCHS}")
    written = [f for f in other if f != "log.log"]
    assert written == [], f"the non-chief worker wrote {written}"


def test_checkpoint_restores_into_simple_trainer(run: str) -> None:
    model = Classifier()
    trainer = _simple_trainer(model, *first_batches(1))
    before = weights(model)
    SmartInit(tf.train.latest_checkpoint(os.path.join(run, "worker0"))).init(trainer)
    for got, want, old in zip(weights(model), _load(run, "worker0_final"), before):
        np.testing.assert_array_equal(got, want)
        assert not np.array_equal(got, old)


def _start_workers(out, *args: str, collective_timeout: str = "10") -> list[subprocess.Popen]:
    """Two workers of mw_job.py without the launcher (which would stop a survivor itself)."""
    cluster = local_cluster(2)
    procs = []
    for k in range(2):
        env = _env()
        env.update(TF_CONFIG=ClusterSpec(cluster, "worker", k).to_tf_config(), MW_TIMEOUT=collective_timeout)
        procs.append(subprocess.Popen([sys.executable, JOB, "--out", str(out), *args], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    return procs


def test_a_sigterm_on_one_worker_stops_both_after_the_same_step_and_the_chief_saves_it(tmp_path) -> None:
    from trainstack.callbacks import load_loop_state  # noqa: PLC0415

    procs = _start_workers(tmp_path, "--steps", "100000", "--epochs", "1", "--die-at", "5", "--signal", "TERM")
    try:
        codes = [p.wait(timeout=120) for p in procs]
        outputs = [p.stdout.read() for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert codes == [143, 143], outputs[0][-3000:] + outputs[1][-3000:]
    # worker 1 asked at step 5; the request rode in step 6's all-reduce; both stopped after it
    assert load_loop_state(tmp_path / "worker0")["global_step"] == 6
    assert "received by another process" in outputs[0]
    assert all("training stops before its next step starts" in out for out in outputs)
    # one numbering: every line that names a step names the one the checkpoint holds
    for out in outputs:
        assert set(re.findall(r"global step (\d+)", out)) <= {"6"}, out[-3000:]
    assert "SIGTERM received: every process stops after the next step" in outputs[1]
    assert "Ctrl-C" not in outputs[0] + outputs[1]  # the hint that applies to SIGTERM


def test_a_dead_worker_makes_the_other_fail_in_bounded_time(tmp_path) -> None:
    procs = _start_workers(tmp_path, "--steps", "100000", "--epochs", "1", "--die-at", "5")
    try:
        assert procs[1].wait(timeout=120) == -9  # SIGKILLed itself at step 5
        died = time.monotonic()
        code = procs[0].wait(timeout=90)
        waited = time.monotonic() - died
        output = procs[0].stdout.read()
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert code != 0, output[-3000:]
    assert "done" not in output.splitlines()[-1]
    assert waited < 90
    assert any(s in output for s in ("Unavailable", "DeadlineExceeded", "Cancelled", "Aborted",
                                     "collective", "Collective")), output[-3000:]
    # the worker's closed connections abort the collective at once: the error names it, and the step.
    # Worker 1 dies after its step 5; worker 0 is then in step 6, or, under load, still in step 5's
    # allreduce, whose last transfer worker 1's death can cut off (seen once: "after global step 4")
    assert re.search(r"DistributedTrainerReplicated worker0: the allreduce in the step's gradient aggregation "
                     r"across its 2 workers \(MultiWorkerMirroredStrategy's collective ops\) failed in the step "
                     r"after global step [456]: another worker died", output), output[-3000:]


def test_the_watchdog_ends_the_worker_of_a_silent_peer_naming_the_collective(tmp_path) -> None:
    """A worker that stops answering without closing its connections (frozen with SIGSTOP, as a host
    that vanished; killed with SIGKILL at the end): TensorFlow's heartbeats notice it after some
    seconds (5-10 here), its collective timeout (600 s) later; the other worker's StepWatchdog (2 s)
    ends it first, naming the allreduce it waits in. The chief's checkpoint of epoch 1 stays the
    latest. (A worker killed outright resets its connections: the collective fails at once, see
    test_a_dead_worker_makes_the_other_fail_in_bounded_time.)"""
    procs = _start_workers(tmp_path, "--steps", "4", "--epochs", "100", "--die-at", "6", "--signal", "STOP",
                           "--watchdog", "2", collective_timeout="600")
    try:
        code = procs[0].wait(timeout=200)
        output = procs[0].stdout.read()
        assert procs[1].poll() is None  # frozen, not dead, until now
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert code == 1, output[-3000:]
    assert ("StepWatchdog(2 s): global step 7 (epoch 2) has not finished after 2 s, the limit. A step of "
            "DistributedTrainerReplicated waits in the allreduce in the step's gradient aggregation across its "
            "2 workers") in output, output[-3000:]
    assert "[MainThread] (most recent call first)" in output
    assert tf.train.latest_checkpoint(os.path.join(tmp_path, "worker0")).endswith("model-4")


def test_strategy_made_after_an_op_gets_a_clear_error() -> None:
    code = ("import tensorflow as tf\n"
            "tf.constant(1.0) + 1.0\n"
            "from trainstack.distributed import DistributedTrainerReplicated, local_cluster\n"
            "DistributedTrainerReplicated(local_cluster(2), 'worker', 0)\n")
    proc = subprocess.run([sys.executable, "-c", code], env=_env(), capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode != 0
    assert "must be created before TensorFlow runs any op" in proc.stderr, proc.stderr[-2000:]
