"""The run the storage-fault tests (test_storage_faults.py) break: a small model trained with
``AutoResumeTrainConfig``, ``ModelSaver`` and the default callbacks and monitors, as a user's
script would. Run as a program it resumes whatever ``LOGDIR`` holds, trains to ``--epochs``,
then prints its closing lines as the main job does and saves the final weights::

    python storage_fault_job.py LOGDIR --epochs 6 [--weights final.npy]
        [--file-size-limit-at-epoch K] [--kill-in-save K] [--hold-at-epoch K --ready F --go F]

The fault options inject what an operator would: a file-size limit (``RLIMIT_FSIZE``: every
write that would make a file larger than the last checkpoint's data fails, as on a full disk),
SIGKILL inside the K-th checkpoint write (after its shards, before their merge), or a pause at
the start of epoch K holding the directory (the second-run tests). The tests also import
:func:`train` to run it in their own process.
"""
from __future__ import annotations

import argparse
import glob
import logging
import os
import resource
import signal
import sys
import time

import keras
import numpy as np
import tensorflow as tf

from trainstack.callbacks import ModelSaver, add_moving_summary, set_logger_dir
from trainstack.loop import Callback
from trainstack.towers import AutoResumeTrainConfig, ModelDesc, SimpleTrainer, launch_train_with_config

STEPS = 6  # steps per epoch: one pass over the batches
WIDTH = 4096  # hidden units: a checkpoint of about 120 KB, so that a small filesystem fills up


class WideModel(ModelDesc):
    """Two dense layers on 4 features, 2 classes; seeded, so every run starts from the same weights."""

    def __init__(self) -> None:
        self.hidden = keras.layers.Dense(WIDTH, kernel_initializer=keras.initializers.GlorotUniform(seed=1))
        self.out = keras.layers.Dense(2, kernel_initializer=keras.initializers.GlorotUniform(seed=2))

    def inputs(self):
        return [tf.TensorSpec([None, 4], tf.float32, "x"), tf.TensorSpec([None], tf.int32, "label")]

    def build_graph(self, x, label):
        logits = self.out(tf.nn.relu(self.hidden(x)))
        cost = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=label, logits=logits),
                              name="cost")
        add_moving_summary(cost)
        return cost

    def optimizer(self):
        return keras.optimizers.SGD(0.05)


def batches() -> list:
    """``STEPS`` batches of 16 of two separable blobs (fixed)."""
    rng = np.random.default_rng(0)
    out = []
    for _ in range(STEPS):
        label = rng.integers(0, 2, size=16).astype("int32")
        out.append(((rng.normal(size=(16, 4)) + 2.0 * label[:, None]).astype("float32"), label))
    return out


def weights(model: WideModel) -> np.ndarray:
    return np.concatenate([v.numpy().ravel() for v in (*model.hidden.weights, *model.out.weights)])


def train(logdir: str, epochs: int, callbacks: list | None = None, action: str = "k") -> np.ndarray:
    """Resume (or start) the run in ``logdir`` and train it to epoch ``epochs``; its final weights.
    ``callbacks`` go before the ModelSaver."""
    keras.utils.set_random_seed(1)
    set_logger_dir(logdir, action=action)
    model = WideModel()
    config = AutoResumeTrainConfig(model=model, dataflow=batches(), max_epoch=epochs,
                                   callbacks=[*(callbacks or []), ModelSaver()])
    launch_train_with_config(config, SimpleTrainer())
    return weights(model)


class FileSizeLimit(Callback):
    """From the start of epoch ``epoch`` on, no file may grow to the size of a checkpoint's data:
    the next checkpoint cannot be written (the smaller stats and event files still can)."""

    def __init__(self, epoch: int, logdir: str) -> None:
        self.epoch, self.logdir = epoch, logdir

    def _before_epoch(self) -> None:
        if self.epoch_num != self.epoch:
            return
        data = glob.glob(os.path.join(self.logdir, "model-*.data-*"))
        limit = max(os.path.getsize(p) for p in data) - 1
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails with EFBIG instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))


class Hold(Callback):
    """At the start of epoch ``epoch``: create ``ready``, then wait for ``go`` to exist."""

    def __init__(self, epoch: int, ready: str, go: str) -> None:
        self.epoch, self.ready, self.go = epoch, ready, go

    def _before_epoch(self) -> None:
        if self.epoch_num != self.epoch:
            return
        open(self.ready, "w").close()
        deadline = time.monotonic() + 600  # a hang guard only: the test creates `go`
        while not os.path.exists(self.go):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.go} never appeared")
            time.sleep(0.05)


def kill_in_save(n: int) -> None:
    """SIGKILL this process inside the ``n``-th checkpoint write: its shards are in
    ``model-<N>_temp/``, not yet merged into place."""
    from tensorflow.python.checkpoint import functional_saver  # noqa: PLC0415

    merge, saves = functional_saver.gen_io_ops.merge_v2_checkpoints, []

    def merge_then_die(*args, **kwargs):
        saves.append(1)
        if len(saves) == n:
            os.kill(os.getpid(), signal.SIGKILL)
        return merge(*args, **kwargs)

    functional_saver.gen_io_ops.merge_v2_checkpoints = merge_then_die


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("logdir")
    parser.add_argument("--epochs", type=int, required=True)
    parser.add_argument("--action", default="k")
    parser.add_argument("--weights")
    parser.add_argument("--file-size-limit-at-epoch", type=int)
    parser.add_argument("--kill-in-save", type=int)
    parser.add_argument("--hold-at-epoch", type=int)
    parser.add_argument("--ready")
    parser.add_argument("--go")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="[%(name)s %(levelname)s] %(message)s")
    callbacks: list[Callback] = []
    if args.file_size_limit_at_epoch:
        callbacks.append(FileSizeLimit(args.file_size_limit_at_epoch, args.logdir))
    if args.hold_at_epoch:
        callbacks.append(Hold(args.hold_at_epoch, args.ready, args.go))
    if args.kill_in_save:
        kill_in_save(args.kill_in_save)
    final = train(args.logdir, args.epochs, callbacks, args.action)
    if args.weights:
        np.save(args.weights, final)
    print(f"checkpoints:      {tf.train.latest_checkpoint(args.logdir)} (latest)", flush=True)


if __name__ == "__main__":
    sys.exit(main())
