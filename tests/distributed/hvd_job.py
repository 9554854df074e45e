"""A HorovodTrainer job for test_horovod.py and benchmarks/horovod_scaling.py (one process per rank).

    horovodrun -np 2 -H localhost:2 --gloo python tests/distributed/hvd_job.py --out DIR [--epochs E]

Every rank trains :class:`TinyClassifier` on its shard (``shard_dataflow``) of
``make_batches()``, with the default callbacks and monitors plus ModelSaver, and
calls ``set_logger_dir(DIR/logs)``, the same directory on every rank (rank 0's
writers only must write there). Each rank writes ``DIR/rank<r>.npz`` (the
weights after the initial broadcast, after step 1 and at the end) and
``DIR/rank<r>.json`` (its monitors; the error that ended training, if any).
``--kill-rank R --kill-step K``: rank R kills itself (SIGKILL) at step K,
after writing the time to ``DIR/killed.json``; with ``--kill-signal STOP`` it
stops itself instead (SIGSTOP: a hung rank that does not die); with ``TERM`` or
``INT`` it sends itself that signal (a preemption: training stops gracefully).
``--watchdog S``: every rank runs a StepWatchdog of S seconds (120 for its first step).
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from trainstack.callbacks import ModelSaver, set_logger_dir  # noqa: E402
from trainstack.loop import Callback, StepWatchdog, TrainingInterrupted  # noqa: E402
from trainstack.towers import ModelDesc  # noqa: E402

FEATURES, BATCH, LEARNING_RATE = 4, 16, 0.5


class TinyClassifier(ModelDesc):
    """Logistic regression (one Dense(2)) on 4 features, trained with plain SGD."""

    def __init__(self, hidden: int = 0) -> None:
        self.hidden = keras.layers.Dense(hidden, activation="relu") if hidden else None
        self.fc = keras.layers.Dense(2)

    def inputs(self):
        return [tf.TensorSpec([None, FEATURES], tf.float32, "x"), tf.TensorSpec([None], tf.int32, "label")]

    def build_graph(self, x, label):
        h = self.hidden(x) if self.hidden is not None else x
        logits = self.fc(h)
        return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=label, logits=logits),
                              name="cost")

    def optimizer(self):
        return keras.optimizers.SGD(LEARNING_RATE)


def make_batches(n: int, batch: int = BATCH, seed: int = 0) -> list:
    """``n`` batches ``(x [batch, 4], label [batch])`` of two Gaussian blobs; the same on every rank."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        label = rng.integers(0, 2, size=batch).astype("int32")
        x = (rng.normal(size=(batch, FEATURES)) + 1.5 * label[:, None]).astype("float32")
        out.append((x, label))
    return out


def weights(model: TinyClassifier) -> list[np.ndarray]:
    return [v.numpy() for v in (model.fc.kernel, model.fc.bias)]


class Record(Callback):
    """Every rank: save the weights after the broadcast, after step 1 and at the end; maybe die."""

    _chief_only = False

    def __init__(self, model: TinyClassifier, out: str, rank: int, kill_step: int | None,
                 kill_signal: str = "KILL") -> None:
        self.model, self.out, self.rank, self.kill_step = model, out, rank, kill_step
        self.kill_signal = getattr(signal, f"SIG{kill_signal}")
        self.saved: dict[str, list[np.ndarray]] = {}

    def _before_train(self) -> None:
        self.saved["init"] = weights(self.model)

    def _trigger_step(self) -> None:
        if self.global_step == 1:
            self.saved["step1"] = weights(self.model)
        if self.kill_step is not None and self.global_step == self.kill_step:
            with open(os.path.join(self.out, "killed.json"), "w") as f:
                json.dump({"rank": self.rank, "time": time.time()}, f)
            os.kill(os.getpid(), self.kill_signal)

    def _trigger_epoch(self) -> None:
        # a statistic for the monitors to write (the model records none): rank 0's event file and stats
        self.trainer.monitors.put_scalar("weights_sum", float(sum(np.sum(w) for w in weights(self.model))))

    def _after_train(self) -> None:
        self.saved["final"] = weights(self.model)
        np.savez(os.path.join(self.out, f"rank{self.rank}.npz"),
                 **{f"{k}_{i}": w for k, ws in self.saved.items() for i, w in enumerate(ws)})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batches", type=int, default=8, help="batches in the whole dataset")
    parser.add_argument("--hidden", type=int, default=0)
    parser.add_argument("--kill-rank", type=int, default=None)
    parser.add_argument("--kill-step", type=int, default=None)
    parser.add_argument("--broadcast-every-epoch", action="store_true")
    parser.add_argument("--kill-signal", choices=["KILL", "STOP", "TERM", "INT"], default="KILL")
    parser.add_argument("--watchdog", type=float, default=None)
    args = parser.parse_args()

    from trainstack.distributed import HorovodTrainer, shard_dataflow  # noqa: PLC0415

    trainer = HorovodTrainer(broadcast_every_epoch=args.broadcast_every_epoch)
    rank = trainer.rank
    keras.utils.set_random_seed(100 + rank)  # different initial weights: only the broadcast makes them equal
    set_logger_dir(os.path.join(args.out, "logs"), action="k")
    model = TinyClassifier(args.hidden)
    data = shard_dataflow(make_batches(args.batches), rank, trainer.size)
    trainer.setup_graph(model.get_input_signature(), data, model.build_graph, model.get_optimizer)
    kill = args.kill_step if args.kill_rank == rank else None
    report: dict = {"rank": rank, "size": trainer.size}
    start = time.time()
    try:
        watchdog = [] if args.watchdog is None else [StepWatchdog(args.watchdog, first_step_timeout_s=120,
                                                                  grace_s=1)]
        trainer.train_with_defaults(callbacks=[ModelSaver(), Record(model, args.out, rank, kill, args.kill_signal),
                                               *watchdog],
                                    steps_per_epoch=len(data), max_epoch=args.epochs)
    except TrainingInterrupted as e:  # a stop by a signal, not an error: the script exits with its status
        report["interrupted"] = {"exit_code": e.exit_code, "message": str(e)[:500]}
        raise
    except Exception as e:  # noqa: BLE001 - recorded for the test, then re-raised
        report["error"] = {"type": type(e).__name__, "message": str(e)[:500], "time": time.time()}
        raise
    finally:
        report["monitors"] = [type(m).__name__ for m in (trainer.monitors.monitors if trainer.monitors else [])]
        report["callbacks"] = [type(cb).__name__ for cb in getattr(trainer.callbacks, "cbs", [])]
        report["train_seconds"] = time.time() - start
        report["steps"] = trainer.global_step
        with open(os.path.join(args.out, f"rank{rank}.json"), "w") as f:
            json.dump(report, f)


if __name__ == "__main__":
    main()
