"""train_on_ray (trainstack.distributed.ray) on a local Ray: ``ray.init(num_cpus=2)``, 2 workers.

One driver process (ray_job.py, shared by pytest-xdist's workers through ``once_per_session``)
starts Ray once and makes two runs of the same training: uninterrupted, and with worker 1
SIGKILLed mid-run and Ray Train restarting the worker group. The tests check:

- the uninterrupted run's weights are those of one process (SimpleTrainer) on the two workers'
  batches concatenated, step after step, within mw_model's RTOL/ATOL (1e-5 relative, 1e-6
  absolute: the same float32 sums in another order), as the Horovod and multi-worker tests do;
- the killed run was restarted from a checkpoint reported to Ray and ends with the weights of
  the uninterrupted run (within 1e-6; bit for bit on the CPU in practice);
- Ray's result holds a trainstack checkpoint of the last step that restores into SimpleTrainer.

Skipped only when Ray cannot start here (the driver's error is the reason) or Ray Train is not
installed. Ray's output (long) is in ``<session tmp>/ray_runs/driver.log``, whose tail a failure
shows.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap

import numpy as np
import pytest
import tensorflow as tf

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import ray_job  # noqa: E402
from mw_model import ATOL, BATCH, RTOL, Classifier, make_data, shard, weights  # noqa: E402

DRIVER = os.path.join(HERE, "ray_job.py")
DRIVER_TIMEOUT_S = 600


def _env() -> dict[str, str]:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONUNBUFFERED="1",
               RAY_USAGE_STATS_ENABLED="0",
               # the controller polls the workers (takes their reports in, sees a dead one) this often
               RAY_TRAIN_HEALTH_CHECK_INTERVAL_S="0.5",
               # two workers importing TensorFlow on a loaded 2-core machine can take a minute
               RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S="300")
    env["PYTHONPATH"] = os.pathsep.join([HERE, *filter(None, [env.get("PYTHONPATH")])])  # mw_model, ray_job
    env.pop("TF_CONFIG", None)
    return env


def _drive(out) -> None:
    # Ray's own directory: not under the session's virtualenv (nox puts TMPDIR there, and Ray's
    # workers refuse a temp_dir inside a virtualenv: they die at start and the driver waits for
    # them forever), and short (its Unix sockets live there); removed afterwards
    ray_tmp = tempfile.mkdtemp(prefix="ray-", dir="/tmp")
    try:
        with open(out / "driver.log", "w") as log:
            proc = subprocess.run([sys.executable, DRIVER, "--out", str(out)], env={**_env(), "RAY_TMPDIR": ray_tmp},
                                  stdout=log, stderr=subprocess.STDOUT, timeout=DRIVER_TIMEOUT_S)
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
    if proc.returncode != 0:
        raise AssertionError(f"ray_job.py failed ({proc.returncode}):\n{_tail(out)}")


def _tail(out, n: int = 6000) -> str:
    with open(out / "driver.log", errors="replace") as f:
        return f.read()[-n:]


@pytest.fixture(scope="module")
def runs(once_per_session) -> str:
    """The driver's output directory (both runs), made once per test session."""
    pytest.importorskip("ray.train", reason="Ray Train is not installed: pip install "
                                            "'trainstack-distributed[ray]'")
    out = once_per_session("ray_runs", _drive)
    cannot_start = out / "cannot_start.txt"
    if cannot_start.exists():
        lines = cannot_start.read_text().strip().splitlines()
        pytest.skip(f"Ray cannot start on this machine: {lines[-1] if lines else '?'}")
    return str(out)


def _load(path: str) -> list[np.ndarray]:
    with np.load(path) as f:
        return [f[f"arr_{i}"] for i in range(len(f.files))]


def _driver(runs: str) -> dict:
    with open(os.path.join(runs, "driver.json")) as f:
        return json.load(f)


def _starts(runs: str, run: str, rank: int) -> list[tuple[int, int]]:
    with open(os.path.join(runs, run, f"starts_rank{rank}.txt")) as f:
        return [tuple(map(int, line.split())) for line in f if line.strip()]


def _concatenated_batches(steps: int) -> tuple[np.ndarray, np.ndarray]:
    """Step by step, worker 0's batch then worker 1's: what one process trains on."""
    parts = [shard(*make_data(), k, 2) for k in range(2)]
    xs, ys = [], []
    for step in range(steps):
        for x, y in parts:
            xs.append(x[step * BATCH:(step + 1) * BATCH])
            ys.append(y[step * BATCH:(step + 1) * BATCH])
    return np.concatenate(xs), np.concatenate(ys)


def test_two_ray_workers_take_the_steps_of_one_process_on_the_concatenated_batches(runs: str) -> None:
    from trainstack.inputs import TFDatasetInput  # noqa: PLC0415
    from trainstack.towers import SimpleTrainer  # noqa: PLC0415

    init0, init1 = (_load(os.path.join(runs, "plain", f"rank{r}_init.npz")) for r in range(2))
    final0, final1 = (_load(os.path.join(runs, "plain", f"rank{r}_final.npz")) for r in range(2))
    for a, b in zip(init0, init1):
        np.testing.assert_array_equal(a, b)  # rank 0's initial values were broadcast
    for a, b in zip(final0, final1):
        np.testing.assert_array_equal(a, b)  # the replicas stayed identical
    x, y = _concatenated_batches(ray_job.TOTAL_STEPS)
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(2 * BATCH)
    model = Classifier()
    trainer = SimpleTrainer()
    trainer.setup_graph(model.get_input_signature(), TFDatasetInput(dataset), model.build_graph,
                        model.get_optimizer)
    for variable, value in zip([model.hidden.kernel, model.hidden.bias, model.logits.kernel,
                                model.logits.bias], init0):
        variable.assign(value)
    for _ in range(ray_job.TOTAL_STEPS):
        trainer.train_op()
    for want, got, start in zip(weights(model)[:4], final0[:4], init0):  # the trained variables
        assert not np.allclose(got, start), "training changed nothing"
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


def test_a_killed_worker_is_restarted_by_ray_into_exact_resume(runs: str) -> None:
    report = _driver(runs)
    assert report["killed"]["error"] is None, report["killed"]
    assert report["killed"]["metrics"]["global_step"] == ray_job.TOTAL_STEPS
    assert os.path.exists(os.path.join(runs, "killed", "killed_once")), "rank 1 never killed itself"
    resumed_at = set()
    for rank in range(2):
        starts = _starts(runs, "killed", rank)
        assert len(starts) == 2, f"rank {rank} started {starts}, expected a first start and one restart"
        (pid0, step0), (pid1, step1) = starts
        assert pid0 != pid1 and step0 == 0
        # from a checkpoint Ray had registered before the kill (steps 3, 4 or 6; normally 6)
        assert step1 in (3, 4, 6), f"rank {rank} restarted at global step {step1}"
        resumed_at.add(step1)
    assert len(resumed_at) == 1, f"the workers resumed at different steps {resumed_at}"
    print(f"the restarted workers resumed at global step {resumed_at.pop()} (killed after step "
          f"{ray_job.DIE_AT})")
    uninterrupted = _load(os.path.join(runs, "plain", "rank0_final.npz"))
    for rank in range(2):
        final = _load(os.path.join(runs, "killed", f"rank{rank}_final.npz"))
        assert len(final) == len(uninterrupted) == 5
        for got, want in zip(final, uninterrupted):
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)


def test_the_checkpoint_reported_to_ray_is_the_last_step_and_restores_into_simple_trainer(runs: str) -> None:
    from trainstack.callbacks import load_loop_state  # noqa: PLC0415
    from trainstack.inputs import TFDatasetInput  # noqa: PLC0415
    from trainstack.towers import (
        SimpleTrainer,  # noqa: PLC0415
        SmartInit,  # noqa: PLC0415
    )

    result = _driver(runs)["plain"]
    assert result["error"] is None and result["metrics"]["global_step"] == ray_job.TOTAL_STEPS
    directory = result["checkpoint"]
    assert directory.startswith(os.path.join(runs, "ray_storage", "plain")), directory
    assert load_loop_state(directory)["global_step"] == ray_job.TOTAL_STEPS
    model = Classifier()
    trainer = SimpleTrainer()
    dataset = tf.data.Dataset.from_tensor_slices(make_data(64)).batch(BATCH).repeat()
    trainer.setup_graph(model.get_input_signature(), TFDatasetInput(dataset), model.build_graph,
                        model.get_optimizer)
    SmartInit(directory).init(trainer)
    for got, want in zip(weights(model), _load(os.path.join(runs, "plain", "rank0_final.npz"))):
        np.testing.assert_array_equal(got, want)


def test_importing_trainstack_distributed_does_not_import_ray_and_its_absence_names_the_extra() -> None:
    code = textwrap.dedent("""
        import sys
        import trainstack.distributed
        from trainstack.distributed import train_on_ray, RayWorker
        from trainstack.distributed.ray import RayCheckpointReporter
        assert "ray" not in sys.modules, "importing trainstack.distributed imported ray"
        sys.modules["ray"] = None  # as if Ray were not installed
        try:
            train_on_ray(lambda worker: None, num_workers=2)
        except ImportError as e:
            print("ERROR:", e)
    """)
    proc = subprocess.run([sys.executable, "-c", code], env=_env(), capture_output=True, text=True,
                          timeout=300)  # importing TensorFlow on a loaded 2-core machine
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "ERROR: train_on_ray needs Ray Train" in proc.stdout, proc.stdout[-2000:]
    assert "pip install 'trainstack-distributed[ray]'" in proc.stdout


@pytest.mark.parametrize("kwargs, error, words", [
    ({"num_workers": 0}, ValueError, "num_workers"),
    ({"max_failures": -2}, ValueError, "max_failures"),
    ({"checkpoint_every_k_steps": 0}, ValueError, "checkpoint_every_k_steps"),
    ({"trainer_kwargs": {"cluster": {"worker": ["a:1"]}}}, ValueError, "Ray Train gives the cluster"),
    ({"use_gpu": "yes"}, TypeError, "use_gpu"),
])
def test_bad_arguments_are_refused_before_ray_starts(kwargs: dict, error: type, words: str) -> None:
    from trainstack.distributed.ray import train_on_ray  # noqa: PLC0415

    with pytest.raises(error, match=words):
        train_on_ray(lambda worker: None, **kwargs)
    with pytest.raises(TypeError, match="must be a function RayWorker -> TrainConfig"):
        train_on_ray("make_config")
