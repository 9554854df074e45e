"""A multi-worker script as a cluster scheduler starts it: the cluster from the environment, a
shared log directory, AutoResumeTrainConfig (a restarted task resumes there).

    python tests/distributed/cluster_job.py --out DIR [--tag T] [--die-at K]

with TF_CONFIG (Kubernetes) or Slurm's SLURM_* variables (srun) set per process. Every
worker builds DistributedTrainerReplicated() with no cluster argument (so
``cluster_from_environment`` decides), reads its shard (``cluster_spec.rank`` of
``num_workers``) of :mod:`mw_model`'s data, and trains with
``launch_train_with_config(AutoResumeTrainConfig(...))`` in the logger directory
``DIR/logdir``, shared by all workers (only the chief writes checkpoints there). It writes
``DIR/<tag>.<task>_{init,step1,final}.npz`` (the weights before training, after the run's first
step, at the end) and ``DIR/<tag>.<task>.json`` (the cluster's source, the global step the run
started at, the one it ended at). ``--die-at K``: worker 1 kills itself (SIGKILL) at global step K.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from trainstack.distributed import DistributedTrainerReplicated  # noqa: E402

trainer = DistributedTrainerReplicated(timeout_seconds=float(os.environ.get("MW_TIMEOUT", "20")))

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from mw_model import BATCH, Classifier, make_data, shard, weights  # noqa: E402

from trainstack.callbacks import ModelSaver, set_logger_dir  # noqa: E402
from trainstack.inputs import TFDatasetInput  # noqa: E402
from trainstack.loop import Callback  # noqa: E402
from trainstack.towers import AutoResumeTrainConfig, launch_train_with_config  # noqa: E402


class Record(Callback):
    """Weights before training, after the run's first step and at the end; the steps run."""

    _chief_only = False

    def __init__(self, model: Classifier, prefix: str, die_at: int | None) -> None:
        self.model, self.prefix, self.die_at = model, prefix, die_at
        self.first_step: int | None = None

    def _before_train(self) -> None:
        self.started_at = self.global_step
        np.savez(f"{self.prefix}_init.npz", *weights(self.model))

    def _trigger_step(self) -> None:
        if self.first_step is None:
            self.first_step = self.global_step
            np.savez(f"{self.prefix}_step1.npz", *weights(self.model))
        rank = self.trainer.cluster_spec.rank
        if self.die_at is not None and self.global_step == self.die_at and rank == 1:
            print(f"worker1 kills itself at global step {self.global_step}", flush=True)
            os.kill(os.getpid(), signal.SIGKILL)

    def _after_train(self) -> None:
        np.savez(f"{self.prefix}_final.npz", *weights(self.model))
        with open(f"{self.prefix}.json", "w") as f:
            json.dump({"source": self.trainer.cluster_spec.source, "started_at": self.started_at,
                       "first_step": self.first_step, "ended_at": self.global_step,
                       "rank": self.trainer.cluster_spec.rank}, f)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--tag", default="run")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--die-at", type=int, default=None)
    args = parser.parse_args()
    spec = trainer.cluster_spec
    x, y = shard(*make_data(), spec.rank, trainer.num_workers)
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(BATCH, drop_remainder=True).repeat()
    model = Classifier()
    set_logger_dir(os.path.join(args.out, "logdir"), action="k")  # every worker: the shared directory
    record = Record(model, os.path.join(args.out, f"{args.tag}.{spec.task_name}"), args.die_at)
    config = AutoResumeTrainConfig(model=model, data=TFDatasetInput(dataset),
                                   callbacks=[ModelSaver(), record],
                                   steps_per_epoch=args.steps, max_epoch=args.epochs)
    launch_train_with_config(config, trainer)
    print(f"{spec.task_name} done, chief={trainer.is_chief}, step={trainer.global_step}, "
          f"resumed_from={config.resumed_from}", flush=True)


if __name__ == "__main__":
    main()
