"""What the in-graph record of non-finite values costs per step (issue 27), in one run.

    python benchmarks/nonfinite_overhead.py [--workloads mlp deep] [--rounds 8] [--epochs 5] [--steps 100]

Every step of a SingleCostTrainer checks its loss and the gradients it applies for NaN and
Inf and writes the first bad step and tensor into a variable (see
``trainstack/towers/trainers/nonfinite.py``). This compares, side by side, SimpleTrainer with
the record on (the default) and off (``SimpleTrainer(record_nonfinite=False)``), and with
``skip_nonfinite_steps=True`` (the same checks, the update under a ``tf.cond``, the moving
averages kept back to the end of the step), each fed by ``TFDatasetInput`` (the input that
costs the least, so the checks weigh the most):

- one step per call (the loop's Python between steps included, as most runs train);
- ``steps_per_run=100`` (a graph loop: nothing but the step's ops, the harshest measure).

Workloads: ``mlp`` (784-256-10, 4 variables, as keras_compare.py), ``deep`` (784, then
nine 64-wide layers, then 10: 20 variables, so 20 gradient checks on a small step) and
``convnet`` (keras_compare.py's small 28x28 convnet, 8 variables; not run by default). Batch 64,
SGD 0.01, ``add_moving_summary`` of the cost, the default callbacks and monitors.

Contenders run in rounds, one block of ``--epochs`` epochs of ``--steps`` steps each per round
and contender, in turn; a block's first epoch is not counted. Printed: steps/s (median over
epochs) and each contender's speed relative to "record off" with the same steps per call,
the median over rounds of the ratio of their blocks in the round.
"""
from __future__ import annotations

import argparse
import functools
import logging
import os
import platform
from collections.abc import Callable
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from _rounds import Blocks, EpochClock, add_round_arguments, ratio, run_rounds, steps_per_s  # noqa: E402

BATCH, DISTINCT_BATCHES, LEARNING_RATE = 64, 20, 0.01

Block = Callable[[int, int], list[float]]


def make_layers(workload: str) -> list[Any]:
    keras.utils.set_random_seed(0)
    if workload == "mlp":
        return [keras.layers.Dense(256, activation="relu"), keras.layers.Dense(10)]
    if workload == "convnet":  # keras_compare.py's
        return [keras.layers.Reshape([28, 28, 1]),
                keras.layers.Conv2D(16, 3, padding="same", activation="relu"),
                keras.layers.Conv2D(32, 3, strides=2, padding="same", activation="relu"),
                keras.layers.GlobalAveragePooling2D(), keras.layers.Dense(10)]
    return [*(keras.layers.Dense(64, activation="relu") for _ in range(9)), keras.layers.Dense(10)]


def make_dataset() -> tf.data.Dataset:
    rng = np.random.default_rng(0)
    x = rng.normal(size=[DISTINCT_BATCHES, BATCH, 784]).astype("float32")
    y = rng.integers(0, 10, size=[DISTINCT_BATCHES, BATCH]).astype("int32")
    return tf.data.Dataset.from_tensor_slices((x, y)).repeat().prefetch(tf.data.AUTOTUNE)


def contender(workload: str, record: bool | str, skip: bool, steps_per_run: int) -> Block:
    from trainstack.callbacks import add_moving_summary
    from trainstack.inputs import TFDatasetInput
    from trainstack.towers import ModelDesc, SimpleTrainer, TrainConfig, launch_train_with_config

    class Model(ModelDesc):
        def __init__(self) -> None:
            self.layers = make_layers(workload)

        def inputs(self):
            return [tf.TensorSpec([None, 784], tf.float32, "x"), tf.TensorSpec([None], tf.int32, "label")]

        def build_graph(self, x, label):
            for layer in self.layers:
                x = layer(x)
            cost = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=label, logits=x),
                                  name="cost")
            add_moving_summary(cost)
            return cost

        def optimizer(self):
            return keras.optimizers.SGD(LEARNING_RATE)

    def block(epochs: int, steps: int) -> list[float]:
        clock = EpochClock()
        trainer = SimpleTrainer(skip_nonfinite_steps=skip, steps_per_run=steps_per_run, record_nonfinite=record)
        config = TrainConfig(model=Model(), data=TFDatasetInput(make_dataset()), callbacks=[clock],
                             steps_per_epoch=steps, max_epoch=epochs)
        launch_train_with_config(config, trainer)
        return clock.times

    return block


def contenders(workload: str, steps: int) -> dict[str, Block]:
    runs = {}
    for spr in (1, steps):
        calls = "1 step/call" if spr == 1 else f"steps_per_run={spr}"
        runs[f"record off, {calls}"] = contender(workload, False, False, spr)
        runs[f"record on (default), {calls}"] = contender(workload, True, False, spr)
        runs[f"record of the loss only, {calls}"] = contender(workload, "loss", False, spr)
        runs[f"skip_nonfinite_steps, {calls}"] = contender(workload, True, True, spr)
    return runs


def measure(workload: str, rounds: int, epochs: int, steps: int) -> Blocks:
    runs = contenders(workload, steps)
    return run_rounds({name: functools.partial(block, epochs, steps) for name, block in runs.items()},
                      rounds, workload)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workloads", nargs="+", default=["mlp", "deep"], choices=["mlp", "deep", "convnet"])
    add_round_arguments(parser, rounds=8, epochs=5)
    args = parser.parse_args()
    logging.getLogger("trainstack").setLevel(logging.WARNING)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores; TensorFlow {tf.__version__}, "
          f"Keras {keras.__version__}; batch {BATCH}")
    blocks = {w: measure(w, args.rounds, args.epochs, args.steps) for w in args.workloads}
    print("\nsteps/s (median over epochs); in brackets, the speed relative to 'record off' with the "
          "same steps per call (median over rounds of the ratio within a round)\n")
    print("| contender | " + " | ".join(args.workloads) + " |")
    print("|---|" + "---|" * len(args.workloads))
    for name in blocks[args.workloads[0]]:
        off = "record off, " + name.split(", ", 1)[1]
        cells = [f"{steps_per_s(blocks[w][name], args.steps):.0f} "
                 f"({ratio(blocks[w], name, off):.3f}x)" for w in args.workloads]
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
