"""Multi-worker runs started the way cluster schedulers start them, on localhost (cluster_job.py).

- Slurm: two processes with the variables ``srun`` sets for a 2-task step on one node (no
  TF_CONFIG): the cluster comes from Slurm's environment, and the weights are those of
  test_multiworker.py's expectations: the first step equals SimpleTrainer on both workers' first
  batches concatenated, and every step equals it on that step's batches (RTOL/ATOL of mw_model).
- Kubernetes (a TFJob with a Chief and a Worker replica, restartPolicy OnFailure): the worker
  is SIGKILLed mid-epoch, the chief fails, both are restarted with the same TF_CONFIG and
  shared log directory, and the run resumes from the chief's checkpoint (global step 10, not 0)
  and ends with the weights of an uninterrupted run.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import numpy as np
import tensorflow as tf

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from mw_model import ATOL, BATCH, RTOL, Classifier, first_batches, make_data, shard, weights  # noqa: E402

from trainstack.distributed import ClusterSpec, local_cluster  # noqa: E402
from trainstack.inputs import TFDatasetInput  # noqa: E402
from trainstack.towers import SimpleTrainer  # noqa: E402

JOB = os.path.join(HERE, "cluster_job.py")
STEPS, EPOCHS = 10, 2
DIE_AT = 15


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "TF_CONFIG" and not k.startswith("SLURM")}
    env.update(TF_CPP_MIN_LOG_LEVEL="2", PYTHONUNBUFFERED="1", **extra)
    return env


def _consecutive_free_ports(n: int) -> int:
    """A port p such that p .. p+n-1 are free now (Slurm's tasks of a node use base + local id)."""
    for base in range(21000 + os.getpid() % 2000 * 8, 65000, n):
        sockets = []
        try:
            for port in range(base, base + n):
                s = socket.socket()
                s.bind(("localhost", port))
                sockets.append(s)
            return base
        except OSError:
            continue
        finally:
            for s in sockets:
                s.close()
    raise RuntimeError("no free ports")


def _start(out, envs: list[dict[str, str]], *args: str) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, JOB, "--out", str(out), "--steps", str(STEPS),
                              "--epochs", str(EPOCHS), *args], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True) for env in envs]


def _finish(procs: list[subprocess.Popen], timeout: float = 150) -> tuple[list[int], list[str]]:
    try:
        codes = [p.wait(timeout=timeout) for p in procs]
        return codes, [p.stdout.read() for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def _load(out, name: str) -> list[np.ndarray]:
    with np.load(os.path.join(out, f"{name}.npz")) as f:
        return [f[f"arr_{i}"] for i in range(len(f.files))]


def _sgd_reference(init: list[np.ndarray], steps: int, num_workers: int = 2) -> list[np.ndarray]:
    """SimpleTrainer from ``init`` for ``steps`` steps, step s on the workers' s-th batches
    concatenated (worker 0's first): what one synchronous multi-worker step computes."""
    x, y = make_data()
    shards = [shard(x, y, k, num_workers) for k in range(num_workers)]
    per_step = [(np.concatenate([sx[s * BATCH:(s + 1) * BATCH] for sx, _ in shards]),
                 np.concatenate([sy[s * BATCH:(s + 1) * BATCH] for _, sy in shards])) for s in range(steps)]
    xs, ys = np.concatenate([p[0] for p in per_step]), np.concatenate([p[1] for p in per_step])
    model = Classifier()
    trainer = SimpleTrainer()
    dataset = tf.data.Dataset.from_tensor_slices((xs, ys)).batch(BATCH * num_workers)
    trainer.setup_graph(model.get_input_signature(), TFDatasetInput(dataset), model.build_graph,
                        model.get_optimizer)
    for var, value in zip([model.hidden.kernel, model.hidden.bias, model.logits.kernel, model.logits.bias],
                          init):
        var.assign(value)
    result = []
    for _ in range(steps):
        trainer.train_op()
        if not result:
            result.append(weights(model)[:4])
    return [*result, weights(model)[:4]]  # [after step 1, after the last step]


def _assert_close(got: list[np.ndarray], want: list[np.ndarray], init: list[np.ndarray]) -> None:
    for g, w, i in zip(got, want, init):
        assert not np.allclose(g, i), "training changed nothing"
        np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL)


def test_srun_two_tasks_train_like_one_process_on_the_concatenated_batches(tmp_path) -> None:
    base = _consecutive_free_ports(2)
    common = dict(SLURM_JOB_ID="4242", SLURM_STEP_ID="0", SLURM_NTASKS="2", SLURM_STEP_NUM_TASKS="2",
                  SLURM_JOB_NODELIST="localhost", SLURM_STEP_NODELIST="localhost",
                  SLURM_TASKS_PER_NODE="2", SLURM_STEP_TASKS_PER_NODE="2", SLURM_NODEID="0",
                  TRAINSTACK_PORT_BASE=str(base))
    envs = [_env(**common, SLURM_PROCID=str(r), SLURM_LOCALID=str(r)) for r in range(2)]
    codes, outputs = _finish(_start(tmp_path, envs))
    assert codes == [0, 0], outputs[0][-3000:] + outputs[1][-3000:]
    for r in range(2):
        info = json.loads((tmp_path / f"run.worker{r}.json").read_text())
        assert info["source"] == f"Slurm (SLURM_PROCID={r} of SLURM_STEP_NUM_TASKS=2)"
        assert (info["rank"], info["started_at"], info["ended_at"]) == (r, 0, STEPS * EPOCHS)
    init = _load(tmp_path, "run.worker0_init")[:4]
    for a, b in zip(init, _load(tmp_path, "run.worker1_init")):
        np.testing.assert_array_equal(a, b)  # worker 0's initial values were broadcast
    after_first, after_last = _sgd_reference(init, STEPS * EPOCHS)
    x, _ = first_batches(2)
    assert len(x) == 2 * BATCH  # the reference's first step is test_multiworker's
    for r in range(2):
        _assert_close(_load(tmp_path, f"run.worker{r}_step1")[:4], after_first, init)
        _assert_close(_load(tmp_path, f"run.worker{r}_final")[:4], after_last, init)
    assert tf.train.latest_checkpoint(str(tmp_path / "logdir")).endswith(f"model-{STEPS * EPOCHS}")


def test_a_killed_tfjob_worker_restarts_into_resume_from_the_shared_logdir(tmp_path) -> None:
    cluster = local_cluster(1, chief=True)  # a TFJob with a Chief and one Worker replica
    envs = [_env(TF_CONFIG=ClusterSpec(cluster, t, 0).to_tf_config(), MW_TIMEOUT="10")
            for t in ("chief", "worker")]
    codes, outputs = _finish(_start(tmp_path, envs, "--tag", "first", "--die-at", str(DIE_AT)))
    assert codes[1] == -9 and codes[0] != 0, outputs[0][-3000:] + outputs[1][-3000:]
    checkpoint = tf.train.latest_checkpoint(str(tmp_path / "logdir"))
    assert checkpoint.endswith(f"model-{STEPS}"), checkpoint  # epoch 1's, before the kill
    # the pods restart (restartPolicy: OnFailure) with the same TF_CONFIG and volume
    codes, outputs = _finish(_start(tmp_path, envs, "--tag", "second"))
    assert codes == [0, 0], outputs[0][-3000:] + outputs[1][-3000:]
    for task, rank in (("chief0", 0), ("worker0", 1)):
        info = json.loads((tmp_path / f"second.{task}.json").read_text())
        assert info["source"] == "TF_CONFIG" and info["rank"] == rank
        # the global step continues from the checkpoint instead of restarting at 0
        assert (info["started_at"], info["first_step"], info["ended_at"]) == (STEPS, STEPS + 1,
                                                                            STEPS * EPOCHS)
    assert "resumed_from=" + checkpoint in outputs[0]
    # the restored weights and the input's position (it skipped the saved steps' batches):
    # the same end as an uninterrupted run, i.e. as one process on the concatenated batches
    init = _load(tmp_path, "first.chief0_init")[:4]
    _, after_last = _sgd_reference(init, STEPS * EPOCHS)
    for task in ("chief0", "worker0"):
        _assert_close(_load(tmp_path, f"second.{task}_final")[:4], after_last, init)
    assert tf.train.latest_checkpoint(str(tmp_path / "logdir")).endswith(f"model-{STEPS * EPOCHS}")
