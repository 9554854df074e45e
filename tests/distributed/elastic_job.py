"""An ElasticHorovodTrainer job for test_horovod_elastic.py and benchmarks/elastic_timeline.py.

    horovodrun -np 2 --min-np 1 --max-np 2 --host-discovery-script DIR/discover.sh \\
        python tests/distributed/elastic_job.py --out DIR [--epochs E --steps S ...]

Every process trains :class:`IndexedClassifier` on the whole dataset of
``--batches`` batches (the trainer shares it out), with ModelSaver, ProgressBar,
JSONWriter, :class:`ChiefStepCounter` (a chief-only callback with
state) and ScaleLearningRateOnResize, in the logger directory DIR/logs. Each
datapoint carries its index in the pass; the step stores the index it trained
on in a variable, and :class:`Record` appends, after every step, this process's
``{"t", "pid", "rank", "size", "step", "idx", "host"}`` to DIR/steps-<pid>.jsonl.
``--kill-step K --kill-rank R``: the process that is rank R kills itself
(SIGKILL) after step K, once per job (DIR/killed.json marks it). At the end
each process that trained to the end writes DIR/result-<pid>.json (rank, size, the global step, the elastic events, the weights, the learning rate, the chief
counter's value, and when the process started, initialized Horovod, and was
ready to train).
"""
from __future__ import annotations

import time

STARTED = time.time()  # before anything is imported: a joining worker's start-up is part of a resize

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from trainstack.callbacks import JSONWriter, ModelSaver, ProgressBar, set_logger_dir  # noqa: E402
from trainstack.callbacks.callback_state import NumbersState  # noqa: E402
from trainstack.loop import Callback  # noqa: E402
from trainstack.towers import ModelDesc  # noqa: E402

FEATURES, BATCH, LEARNING_RATE = 4, 4, 0.2

with tf.device("CPU:0"):
    #: the index of the datapoint the last step trained on (written inside the traced step)
    SEEN = tf.Variable(-1, dtype=tf.int32, trainable=False, name="seen_index")


class IndexedClassifier(ModelDesc):
    """Logistic regression on 4 features; each batch also carries its index (stored, not used)."""

    def __init__(self) -> None:
        self.fc = keras.layers.Dense(2)

    def inputs(self):
        return [tf.TensorSpec([None, FEATURES], tf.float32, "x"), tf.TensorSpec([None], tf.int32, "label"),
                tf.TensorSpec([], tf.int32, "idx")]

    def build_graph(self, x, label, idx):
        SEEN.assign(idx)
        logits = self.fc(x)
        return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=label, logits=logits),
                              name="cost")

    def optimizer(self):
        return keras.optimizers.SGD(LEARNING_RATE)


def make_batches(n: int, seed: int = 0) -> list:
    """``n`` batches ``(x [4, 4], label [4], index)`` of two Gaussian blobs; the same on every rank."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        label = rng.integers(0, 2, size=BATCH).astype("int32")
        x = (rng.normal(size=(BATCH, FEATURES)) + 1.5 * label[:, None]).astype("float32")
        out.append((x, label, np.int32(i)))
    return out


class ChiefStepCounter(Callback):
    """Chief-only, with state: counts the steps the chief saw. With the state committed and
    handed to a new rank 0, it ends equal to the number of steps of the run."""

    def _setup_graph(self) -> None:
        self.count = 0
        self._state = NumbersState("chief_step_counter", count=1)

    def _trigger_step(self) -> None:
        self.count += 1

    def checkpoint_state(self) -> tf.Module:
        self._state.put("count", [self.count])
        return self._state

    def load_checkpoint_state(self) -> None:
        self.count = int(self._state.get("count")[0])


class Record(Callback):
    """Every process: after each step, append what it trained on; sleep; maybe die."""

    _chief_only = False

    def __init__(self, out: str, sleep: float, kill_step: int | None, kill_rank: int) -> None:
        self.out, self.sleep, self.kill_step, self.kill_rank = out, sleep, kill_step, kill_rank
        self.file = open(os.path.join(out, f"steps-{os.getpid()}.jsonl"), "a", buffering=1)

    def _trigger_step(self) -> None:
        t = self.trainer
        self.file.write(json.dumps({"t": time.time(), "pid": os.getpid(), "rank": t.rank, "size": t.size,
                                    "step": t.global_step, "idx": int(SEEN.numpy()),
                                    "host": os.environ.get("HOROVOD_HOSTNAME", "")}) + "\n")
        marker = os.path.join(self.out, "killed.json")
        if self.kill_step == t.global_step and t.rank == self.kill_rank and not os.path.exists(marker):
            with open(marker, "w") as f:
                json.dump({"pid": os.getpid(), "rank": t.rank, "step": t.global_step, "time": time.time()}, f)
            os.kill(os.getpid(), signal.SIGKILL)
        if self.sleep:
            time.sleep(self.sleep)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--steps", type=int, default=10, help="steps per epoch")
    parser.add_argument("--batches", type=int, default=20, help="datapoints (batches) in one pass")
    parser.add_argument("--commit-every", type=int, default=3)
    parser.add_argument("--step-sleep", type=float, default=0.0)
    parser.add_argument("--kill-step", type=int, default=None)
    parser.add_argument("--kill-rank", type=int, default=0)
    args = parser.parse_args()

    from trainstack.distributed import ElasticHorovodTrainer, ScaleLearningRateOnResize, shard_dataflow  # noqa

    trainer = ElasticHorovodTrainer(commit_every=args.commit_every)
    initialized = time.time()
    keras.utils.set_random_seed(100 + trainer.rank)  # different weights: only the broadcast makes them equal
    set_logger_dir(os.path.join(args.out, "logs"), action="k")
    model = IndexedClassifier()
    # a HorovodTrainer script's sharding, kept: the elastic trainer unwraps it and shards by itself
    data = shard_dataflow(make_batches(args.batches), trainer.rank, trainer.size)
    trainer.setup_graph(model.get_input_signature(), data, model.build_graph, model.get_optimizer)
    counter = ChiefStepCounter()
    ready = time.time()
    # few callbacks and monitors: each one that fetches from the step costs a trace, and a worker
    # that joins makes the others wait for its set-up
    trainer.train(callbacks=[ModelSaver(max_to_keep=2), counter, ScaleLearningRateOnResize(), ProgressBar(),
                             Record(args.out, args.step_sleep, args.kill_step, args.kill_rank)],
                  monitors=[JSONWriter()], steps_per_epoch=args.steps, max_epoch=args.epochs)
    result = {"pid": os.getpid(), "rank": trainer.rank, "size": trainer.size,
              "global_step": trainer.global_step, "events": trainer.elastic_events,
              "weights": [w.tolist() for w in (model.fc.kernel.numpy(), model.fc.bias.numpy())],
              "lr": float(trainer.optimizer.learning_rate.numpy()), "chief_count": counter.count,
              "started": STARTED, "initialized": initialized, "ready": ready}
    with open(os.path.join(args.out, f"result-{os.getpid()}.json"), "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
