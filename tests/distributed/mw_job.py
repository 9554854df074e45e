"""A multi-worker training script the tests start with the launcher (one process per task).

    python -m trainstack.distributed.launch -n 2 tests/distributed/mw_job.py --out DIR [--steps N]

Each worker trains :class:`mw_model.Classifier` on its shard with
DistributedTrainerReplicated (TF_CONFIG from the launcher), with the default
callbacks and monitors plus ModelSaver, in the logger directory ``DIR/<task>``;
it writes its weights before training, after the first step and at the end
to ``DIR/<task>_{init,step1,final}.npz``. ``--die-at K``: worker 1 kills
itself (SIGKILL) at step K; with ``--signal TERM`` (or ``INT``) it sends itself
that signal instead (a preemption: every worker stops gracefully); with ``STOP`` it
freezes (a worker that stops answering without closing its connections). ``--watchdog S``: every worker
runs a StepWatchdog of S seconds (its first step, which compiles, gets 120).
"""
from __future__ import annotations

import argparse
import os
import signal
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from trainstack.distributed import DistributedTrainerReplicated  # noqa: E402

# the strategy is made before TensorFlow runs any op
trainer = DistributedTrainerReplicated(timeout_seconds=float(os.environ.get("MW_TIMEOUT", "20")))

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from mw_model import BATCH, Classifier, make_data, shard, weights  # noqa: E402

from trainstack.callbacks import ModelSaver, set_logger_dir  # noqa: E402
from trainstack.inputs import TFDatasetInput  # noqa: E402
from trainstack.loop import Callback, StepWatchdog  # noqa: E402


class RecordWeights(Callback):
    """Save the model's weights before training, after step 1 and at the end (every worker)."""

    _chief_only = False

    def __init__(self, model: Classifier, prefix: str, die_at: int | None, sig: str = "KILL") -> None:
        self.model, self.prefix, self.die_at = model, prefix, die_at
        self.signal = getattr(signal, f"SIG{sig}")

    def _save(self, what: str) -> None:
        np.savez(f"{self.prefix}_{what}.npz", *weights(self.model))

    def _before_train(self) -> None:
        self._save("init")

    def _trigger_step(self) -> None:
        if self.global_step == 1:
            self._save("step1")
        if self.die_at is not None and self.global_step == self.die_at and not self.trainer.is_chief:
            print(f"worker sends itself {self.signal.name} now", flush=True)
            os.kill(os.getpid(), self.signal)

    def _trigger_epoch(self) -> None:
        # a statistic for the monitors to write (the model records none): the chief's event file and stats
        self.trainer.monitors.put_scalar("weights_sum", float(sum(np.sum(w) for w in weights(self.model))))

    def _after_train(self) -> None:
        self._save("final")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--die-at", type=int, default=None)
    parser.add_argument("--signal", choices=["KILL", "TERM", "INT", "STOP"], default="KILL")
    parser.add_argument("--watchdog", type=float, default=None)
    args = parser.parse_args()
    spec = trainer.cluster_spec
    x, y = shard(*make_data(), spec.task_index, trainer.num_workers)
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(BATCH, drop_remainder=True).repeat()
    model = Classifier()
    trainer.setup_graph(model.get_input_signature(), TFDatasetInput(dataset), model.build_graph,
                        model.get_optimizer)
    set_logger_dir(os.path.join(args.out, spec.task_name), action="d")
    watchdog = [] if args.watchdog is None else [StepWatchdog(args.watchdog, first_step_timeout_s=120, grace_s=1)]
    trainer.train_with_defaults(
        callbacks=[ModelSaver(), RecordWeights(model, os.path.join(args.out, spec.task_name), args.die_at,
                                               args.signal), *watchdog],
        steps_per_epoch=args.steps, max_epoch=args.epochs)
    print(f"{spec.task_name} done, chief={trainer.is_chief}, step={trainer.global_step}", flush=True)


if __name__ == "__main__":
    main()
