"""The Ray runs tests/distributed/test_ray.py checks (one driver process; one local Ray for all).

    python tests/distributed/ray_job.py --out DIR

Starts a local Ray (``ray.init(num_cpus=2)``) and trains :class:`mw_model.Classifier` with
``train_on_ray`` on 2 workers twice, the same run (same seed, same shards, STEPS_PER_EPOCH x
EPOCHS steps, a checkpoint reported every CHECKPOINT_EVERY steps and at each epoch's end):

- ``DIR/plain``: uninterrupted;
- ``DIR/killed``: worker 1 SIGKILLs itself after step DIE_AT of its first start; Ray Train
  (``max_failures=1``) restarts both workers, which resume from the latest checkpoint Ray
  registered (normally step 6: mid-epoch, so the input resumes inside an epoch too).

Each worker writes ``<run>/rank<r>_{init,final}.npz`` (its weights before its first step and at
the end) and appends ``<pid> <global step it starts at>`` to ``<run>/starts_rank<r>.txt``.
``DIR/driver.json``: the timings (Ray's start-up, each run) and each run's Ray Result. When Ray
cannot start here, ``DIR/cannot_start.txt`` holds the error and the script exits 0.
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import signal
import sys
import time
import traceback

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

#: 8 steps; checkpoints reported at steps 3, 4 (epoch end), 6 and 8; rank 1 dies after step 7
STEPS_PER_EPOCH, EPOCHS, CHECKPOINT_EVERY, DIE_AT = 4, 2, 3, 7
#: how long rank 1 waits before it kills itself, so that Ray's controller has taken in the
#: checkpoint of step 6 (it polls the workers every RAY_TRAIN_HEALTH_CHECK_INTERVAL_S)
DIE_DELAY_S = 2.0
TOTAL_STEPS = STEPS_PER_EPOCH * EPOCHS


def mark(out: str, rank: int, event: str, step: int) -> None:
    """Append ``<time> rank<r> <event> <global step>`` to ``out/timeline.txt`` (the run's start-up cost)."""
    with open(os.path.join(out, "timeline.txt"), "a") as f:
        f.write(f"{time.time():.3f} rank{rank} {event} {step}\n")


def make_config(worker, out: str, die_at: int | None):  # noqa: ANN001, ANN201 - runs in the Ray worker
    """The TrainConfig of one Ray worker: its shard of mw_model's data, the classifier, seeded."""
    import keras  # noqa: PLC0415
    import numpy as np  # noqa: PLC0415
    import tensorflow as tf  # noqa: PLC0415
    from mw_model import BATCH, Classifier, make_data, shard, weights  # noqa: PLC0415

    from trainstack.inputs import TFDatasetInput  # noqa: PLC0415
    from trainstack.loop import Callback  # noqa: PLC0415
    from trainstack.towers import TrainConfig  # noqa: PLC0415

    class Record(Callback):
        """Weights at the start and the end; where each start began; the kill (rank 1, first start)."""

        _chief_only = False

        def _save(self, what: str) -> None:
            np.savez(os.path.join(out, f"rank{worker.rank}_{what}.npz"), *weights(model))

        def _mark(self, event: str) -> None:
            mark(out, worker.rank, event, self.global_step)

        def _before_train(self) -> None:
            with open(os.path.join(out, f"starts_rank{worker.rank}.txt"), "a") as f:
                f.write(f"{os.getpid()} {self.global_step}\n")
            self._mark("before_train")
            if worker.resumed_from is None:
                self._save("init")

        def _trigger_step(self) -> None:
            marker = os.path.join(out, "killed_once")
            if self.global_step == 1:
                self._mark("first_step_done")
            if worker.rank == 1 and self.global_step == die_at and not os.path.exists(marker):
                open(marker, "w").close()
                time.sleep(DIE_DELAY_S)
                self._mark("kill")
                print(f"rank 1 SIGKILLs itself after global step {self.global_step}", flush=True)
                os.kill(os.getpid(), signal.SIGKILL)

        def _after_train(self) -> None:
            self._mark("after_train")
            if self.trainer.loop.epoch_finished and self.epoch_num == EPOCHS:
                self._save("final")

    os.makedirs(out, exist_ok=True)
    mark(out, worker.rank, "make_config", -1)
    # Ray's TensorFlow backend sets it to "1" (tf.keras -> Keras 2); train_on_ray puts back the driver's
    assert "TF_USE_LEGACY_KERAS" not in os.environ, "train_on_ray left Ray's TF_USE_LEGACY_KERAS=1 set"
    keras.utils.set_random_seed(0)  # the same initial weights in both runs
    x, y = shard(*make_data(), worker.rank, worker.world_size)
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(BATCH, drop_remainder=True).repeat()
    model = Classifier()
    return TrainConfig(model=model, data=TFDatasetInput(dataset), callbacks=[Record()],
                       steps_per_epoch=STEPS_PER_EPOCH, max_epoch=EPOCHS)


def _result(result) -> dict:  # noqa: ANN001 - ray.train.Result
    return {"metrics": dict(result.metrics or {}),
            "checkpoint": None if result.checkpoint is None else result.checkpoint.path,
            "error": None if result.error is None else repr(result.error)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    report: dict = {}
    launched = time.monotonic()
    import ray  # noqa: PLC0415

    try:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=True)
    except Exception:  # noqa: BLE001 - any failure to start Ray here is the reason to skip
        with open(os.path.join(out, "cannot_start.txt"), "w") as f:
            f.write(traceback.format_exc())
        return
    report["ray_init_s"] = time.monotonic() - launched
    from trainstack.distributed.ray import train_on_ray  # noqa: PLC0415

    storage = os.path.join(out, "ray_storage")
    try:
        for run, die_at, max_failures in (("plain", None, 0), ("killed", DIE_AT, 1)):
            began = time.monotonic()
            report[f"{run}_fit_began"] = time.time()
            result = train_on_ray(functools.partial(make_config, out=os.path.join(out, run), die_at=die_at),
                                  num_workers=2, max_failures=max_failures,
                                  checkpoint_every_k_steps=CHECKPOINT_EVERY, storage_path=storage, name=run,
                                  trainer_kwargs={"timeout_seconds": 30})
            report[f"{run}_s"] = time.monotonic() - began
            report[f"{run}_fit_returned"] = time.time()
            report[run] = _result(result)
    finally:
        began = time.monotonic()
        ray.shutdown()
        report["ray_shutdown_s"] = time.monotonic() - began
        report["total_s"] = time.monotonic() - launched
        with open(os.path.join(out, "driver.json"), "w") as f:
            json.dump(report, f, indent=1, default=str)
    print(json.dumps(report, default=str), flush=True)


if __name__ == "__main__":
    main()
