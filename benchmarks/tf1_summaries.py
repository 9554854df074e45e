"""What tensorpack's in-graph summaries cost the steps that do not write them (issue 23, point 4).

    python benchmarks/tf1_summaries.py [--rounds 5] [--epochs 4] [--steps 100]

One model (an MLP 784-256-10, SGD 0.01, batch 64, 20 distinct synthetic batches), trained by
``SimpleTrainer`` with the default callbacks and monitors writing into a temporary logger
directory, in three forms, side by side in one process:

- ``no summary``: ``build_graph`` returns the cost;
- ``tf.summary.*``: the same, plus a tensorpack ``build_graph``'s summaries: histograms of the
  hidden activations and of the logits, 3 of the input images, the batch accuracy
  (``tf.summary.histogram/image/scalar``). ``MergeAllSummaries`` writes them after each
  epoch's last step, the only step that computes them;
- ``add_tensor_summary``: the same histograms and scalar recorded with
  ``add_tensor_summary``, which every step computes (kept on the device until written): what
  a summary computed on every step costs.

The forms run in rounds, one block of ``--epochs`` epochs of ``--steps`` steps per round and
form, in turn. A form's figure is its median steps/s over the epochs of its blocks, each
block's first epoch left out (tracing, warming up); the ratio to ``no summary`` is the median
over rounds of the ratio of the two blocks of a round (blocks run close together share the
machine's drift). The goal: ``tf.summary.*`` / ``no summary`` close to 1.0 (only the epoch's
last step, 1 in ``--steps``, computes the summaries; the hooked run that fetches them is part
of the cost). The script also says whether ``MergeAllSummaries`` took part in each trainer's
hooked runs (not for ``no summary``: a trainer without summaries to fetch does not ask it).
"""
from __future__ import annotations

import argparse
import functools
import logging
import os
import platform
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from _rounds import Blocks, EpochClock, add_round_arguments, ratio, run_rounds, steps_per_s  # noqa: E402

BATCH, DISTINCT_BATCHES, LEARNING_RATE = 64, 20, 0.01
FORMS = ("no summary", "tf.summary.*", "add_tensor_summary")


def make_batches() -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(0)
    return [(rng.random((BATCH, 784), dtype=np.float32), rng.integers(0, 10, BATCH).astype(np.int32))
            for _ in range(DISTINCT_BATCHES)]


def run_block(form: str, batches: list, epochs: int, steps: int, logdir: str) -> tuple[list[float], bool]:
    """Train a fresh model for ``epochs`` epochs; return each epoch's seconds, and whether
    MergeAllSummaries took part in the trainer's hooked runs."""
    from trainstack.callbacks import add_tensor_summary, set_logger_dir, unset_logger_dir
    from trainstack.towers import ModelDesc, SimpleTrainer, TrainConfig, launch_train_with_config

    class Model(ModelDesc):
        def __init__(self) -> None:
            keras.utils.set_random_seed(0)
            self.hidden = keras.layers.Dense(256, activation="relu")
            self.out = keras.layers.Dense(10)

        def inputs(self):
            return [tf.TensorSpec([None, 784], tf.float32, "x"), tf.TensorSpec([None], tf.int32, "label")]

        def build_graph(self, x, label):
            h = self.hidden(x)
            logits = self.out(h)
            cost = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=label, logits=logits))
            accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1, output_type=tf.int32), label),
                                              tf.float32))
            if form == "tf.summary.*":
                tf.summary.histogram("hidden", h)
                tf.summary.histogram("logits", logits)
                tf.summary.image("input", tf.reshape(x, [-1, 28, 28, 1]), max_outputs=3)
                tf.summary.scalar("accuracy", accuracy)
            elif form == "add_tensor_summary":
                add_tensor_summary(h, ["histogram"], name="hidden")
                add_tensor_summary(logits, ["histogram"], name="logits")
                add_tensor_summary(accuracy, ["scalar"], name="accuracy")
            return tf.identity(cost, name="cost")

        def optimizer(self):
            return keras.optimizers.SGD(LEARNING_RATE)

    clock = EpochClock()
    set_logger_dir(logdir)
    try:
        trainer = SimpleTrainer()
        launch_train_with_config(TrainConfig(model=Model(), dataflow=batches, callbacks=[clock],
                                             steps_per_epoch=steps, max_epoch=epochs), trainer)
    finally:
        unset_logger_dir()
    return clock.times, any(cb.name == "MergeAllSummaries" for cb in trainer.callbacks.active("before_run"))


def measure(rounds: int, epochs: int, steps: int) -> tuple[Blocks, dict[str, bool]]:
    batches = make_batches()
    hooked: dict[str, bool] = {}
    with tempfile.TemporaryDirectory() as root:
        def block(form: str) -> list[float]:
            times, hooked[form] = run_block(form, batches, epochs, steps, tempfile.mkdtemp(dir=root))
            return times

        blocks = run_rounds({form: functools.partial(block, form) for form in FORMS}, rounds)
    return blocks, hooked


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_round_arguments(parser, rounds=5)
    args = parser.parse_args()
    logging.getLogger("trainstack").setLevel(logging.WARNING)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores; TensorFlow {tf.__version__}, "
          f"Keras {keras.__version__}; MLP 784-256-10, batch {BATCH}, {args.steps} steps/epoch, "
          f"{args.rounds} rounds of {args.epochs} epochs")
    blocks, hooked = measure(args.rounds, args.epochs, args.steps)
    print("\n| form | steps/s | / no summary | MergeAllSummaries in hooked runs |")
    print("|---|---|---|---|")
    for form in FORMS:
        print(f"| {form} | {steps_per_s(blocks[form], args.steps):.0f} | "
              f"{ratio(blocks, form, 'no summary'):.3f}x | {'yes' if hooked[form] else 'no'} |")


if __name__ == "__main__":
    main()
