"""trainstack against Keras 3 at its defaults and at its best, and against a bare tf.function loop.

    python benchmarks/keras_compare.py [--workloads mlp convnet] [--rounds 3] [--epochs 4] [--steps 100]
                                       [--only FeedInput steps_per_run]

Two workloads (an MLP 784-256-10 and a small 28x28 convnet, SGD 0.01, batch 64,
synthetic in-memory data of 20 distinct batches), one process. Every
contender trains the same model from the same data; the contenders run in
rounds, one block of ``--epochs`` epochs of ``--steps`` steps each per round and
contender, in turn, with the garbage of each block collected after it. A
contender's figure is its median steps/s over the epochs of all its blocks except each
block's first (tracing, compiling, warming up). The table prints those and the
ratios to Keras at its best (the fastest Keras row of that workload: on a
CPU, XLA helps the MLP and slows the convnet) and to the bare loop, each the
median over rounds of the ratio of the two blocks of a round (a machine whose
speed drifts slows blocks run close together alike). Then issues 14's and 28's goals,
each met or not.

Contenders:
- bare: a ``tf.function`` step (GradientTape + optimizer), called once per step,
  or looping over ``--steps`` steps inside one call (``tf.range``), the step
  also compiled with XLA (as Keras' ``jit_compile`` does);
- Keras ``fit`` with its defaults (progress bar included), and tuned
  (``steps_per_execution=100``, ``verbose=0``, with and without
  ``jit_compile=True``);
- trainstack: ``launch_train_with_config`` with SimpleTrainer, the default
  callbacks and monitors, fed by ``TFDatasetInput`` or by the dataflow itself
  (``FeedInput``), and any extra trainstack settings listed in ``TRAINSTACK``.
"""
from __future__ import annotations

import argparse
import functools
import logging
import os
import platform
import time
from collections.abc import Callable
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from _rounds import Blocks, EpochClock, add_round_arguments, ratio, run_rounds, steps_per_s  # noqa: E402

BATCH, DISTINCT_BATCHES, LEARNING_RATE = 64, 20, 0.01
BARE = "bare tf.function, 1 step/call"
#: the tuned Keras rows; "Keras at its best" is the fastest of them on each workload
KERAS_TUNED = ("Keras fit, steps_per_execution=100", "Keras fit, jit_compile, steps_per_execution=100")


# -- workloads -----------------------------------------------------------------------------------
def make_layers(workload: str) -> list[Any]:
    keras.utils.set_random_seed(0)
    if workload == "mlp":
        return [keras.layers.Dense(256, activation="relu"), keras.layers.Dense(10)]
    return [keras.layers.Conv2D(16, 3, padding="same", activation="relu"),
            keras.layers.Conv2D(32, 3, strides=2, padding="same", activation="relu"),
            keras.layers.GlobalAveragePooling2D(), keras.layers.Dense(10)]


def input_shape(workload: str) -> list[int]:
    return [784] if workload == "mlp" else [28, 28, 1]


def make_batches(workload: str) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(0)
    return [(rng.normal(size=[BATCH, *input_shape(workload)]).astype("float32"),
             rng.integers(0, 10, size=BATCH).astype("int32")) for _ in range(DISTINCT_BATCHES)]


def dataset(batches: list) -> tf.data.Dataset:
    x, y = (np.stack(part) for part in zip(*batches))
    return tf.data.Dataset.from_tensor_slices((x, y)).repeat().prefetch(tf.data.AUTOTUNE)


def forward(layers: list[Any], x: tf.Tensor) -> tf.Tensor:
    for layer in layers:
        x = layer(x)
    return x


def xent(labels: tf.Tensor, logits: tf.Tensor) -> tf.Tensor:
    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))


# -- contenders: each runs one block of epochs and returns the seconds of each epoch ---------------
Contender = Callable[[int, int], list[float]]


def bare(workload: str, batches: list, steps_per_call: int, jit_compile: bool = False) -> Contender:
    layers = make_layers(workload)
    opt = keras.optimizers.SGD(LEARNING_RATE)
    iterator = iter(dataset(batches))

    def one_step(x: tf.Tensor, y: tf.Tensor) -> tf.Tensor:
        with tf.GradientTape() as tape:
            cost = xent(y, forward(layers, x))
        variables = [v for layer in layers for v in layer.trainable_variables]
        opt.apply_gradients(zip(tape.gradient(cost, variables), variables))
        return cost

    step = tf.function(one_step, jit_compile=True) if jit_compile else one_step

    @tf.function
    def call() -> tf.Tensor:
        cost = tf.constant(0.0)
        for _ in tf.range(steps_per_call):
            cost = step(*next(iterator))
        return cost

    def block(epochs: int, steps: int) -> list[float]:
        times = []
        for _ in range(epochs):
            start = time.perf_counter()
            for _ in range(steps // steps_per_call):
                cost = call()
            cost.numpy()  # wait for the last step
            times.append(time.perf_counter() - start)
        return times

    return block


def keras_fit(workload: str, batches: list, tuned: bool, jit_compile: bool = False) -> Contender:
    model = keras.Sequential([keras.Input(input_shape(workload)), *make_layers(workload)])
    model.compile(optimizer=keras.optimizers.SGD(LEARNING_RATE),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  jit_compile=jit_compile if tuned else "auto", steps_per_execution=100 if tuned else 1)
    data = dataset(batches)

    def block(epochs: int, steps: int) -> list[float]:
        clock = KerasEpochClock()
        model.fit(data, epochs=epochs, steps_per_epoch=steps, callbacks=[clock],
                  verbose=0 if tuned else "auto")
        return clock.times

    return block


class KerasEpochClock(keras.callbacks.Callback):
    def __init__(self) -> None:
        super().__init__()
        self.times: list[float] = []

    def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
        self._start = time.perf_counter()

    def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
        self.times.append(time.perf_counter() - self._start)


def trainstack_run(workload: str, batches: list, input_kind: str | Callable[[], Any],
                   static_batch: bool = False, **trainer_options: Any) -> Contender:
    """trainstack's SimpleTrainer on ``workload``, fed by ``TFDatasetInput`` (``"dataset"``), by the
    dataflow ``batches`` itself (``"dataflow"``), or by what ``input_kind()`` returns. With
    ``static_batch``, the model's inputs() declare the batch size (else None)."""
    batch = BATCH if static_batch else None
    from trainstack.inputs import TFDatasetInput
    from trainstack.towers import ModelDesc, SimpleTrainer, TrainConfig, launch_train_with_config

    class Model(ModelDesc):
        def __init__(self) -> None:
            self.layers = make_layers(workload)

        def inputs(self):
            return [tf.TensorSpec([batch, *input_shape(workload)], tf.float32, "x"),
                    tf.TensorSpec([batch], tf.int32, "label")]

        def build_graph(self, x, label):
            return tf.identity(xent(label, forward(self.layers, x)), name="cost")

        def optimizer(self):
            return keras.optimizers.SGD(LEARNING_RATE)

    def block(epochs: int, steps: int) -> list[float]:
        # a fresh trainer per block (a trainer trains once); its set-up is not timed
        clock = EpochClock()
        if callable(input_kind):
            data = input_kind()
        else:
            data = TFDatasetInput(dataset(batches)) if input_kind == "dataset" else None
        config = TrainConfig(model=Model(), data=data, dataflow=batches if data is None else None,
                             callbacks=[clock], steps_per_epoch=steps, max_epoch=epochs)
        launch_train_with_config(config, SimpleTrainer(**trainer_options))
        return clock.times

    return block


# -- the run --------------------------------------------------------------------------------------
def contenders(workload: str, steps: int) -> dict[str, Contender]:
    batches = make_batches(workload)
    return {
        BARE: bare(workload, batches, 1),
        f"bare tf.function, {steps} steps/call": bare(workload, batches, steps),
        f"bare tf.function, {steps} steps/call, XLA step": bare(workload, batches, steps, jit_compile=True),
        "Keras fit, defaults": keras_fit(workload, batches, tuned=False),
        KERAS_TUNED[0]: keras_fit(workload, batches, tuned=True),
        KERAS_TUNED[1]: keras_fit(workload, batches, tuned=True, jit_compile=True),
        "trainstack SimpleTrainer + TFDatasetInput": trainstack_run(workload, batches, "dataset"),
        "trainstack SimpleTrainer + dataflow (FeedInput)": trainstack_run(workload, batches, "dataflow"),
        "trainstack + TFDatasetInput, xla_compile": trainstack_run(workload, batches, "dataset",
                                                                  xla_compile=True),
        f"trainstack + TFDatasetInput, steps_per_run={steps}": trainstack_run(
            workload, batches, "dataset", steps_per_run=steps),
        f"trainstack + dataflow (QueueInput), steps_per_run={steps}": trainstack_run(
            workload, batches, "dataflow", steps_per_run=steps),
        f"trainstack + TFDatasetInput, steps_per_run={steps}, xla_compile": trainstack_run(
            workload, batches, "dataset", steps_per_run=steps, xla_compile=True),
    }


def measure(workload: str, rounds: int, epochs: int, steps: int, only: list[str]) -> Blocks:
    runs = {name: functools.partial(block, epochs, steps) for name, block in contenders(workload, steps).items()
            if name in (BARE, *KERAS_TUNED) or not only or any(part in name for part in only)}
    return run_rounds(runs, rounds, workload)


def goals(workload: str, blocks: Blocks, speed: dict[str, float], best: str,
          steps: int) -> dict[str, tuple[float, float, str]]:
    """Issue 14's goals (FeedInput's raised to 0.95x by issue 28) that this run measured on
    ``workload``: {goal: (ratio, target, note)}."""
    spr = f"trainstack + TFDatasetInput, steps_per_run={steps}"
    # (goal, contender, reference, target, note)
    pairs = [("FeedInput / TFDatasetInput", "trainstack SimpleTrainer + dataflow (FeedInput)",
              "trainstack SimpleTrainer + TFDatasetInput", 0.95, ""),
             (f"steps_per_run={steps} / bare {steps} steps/call", spr, f"bare tf.function, {steps} steps/call",
              0.95, "")]
    if workload == "mlp":  # the overhead-bound model
        pairs.append((f"steps_per_run={steps} / Keras fit defaults", spr, "Keras fit, defaults", 2.0, ""))
    ours = [name for name in blocks if name.startswith("trainstack")]
    if ours:
        fastest = max(ours, key=speed.get)
        pairs.insert(0, ("fastest trainstack row / Keras at its best", fastest, best, 1.0,
                         fastest.removeprefix("trainstack ")))
    return {goal: (ratio(blocks, a, b), target, note)
            for goal, a, b, target, note in pairs if a in blocks and b in blocks}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workloads", nargs="+", default=["mlp", "convnet"], choices=["mlp", "convnet"])
    add_round_arguments(parser, rounds=3)
    parser.add_argument("--only", nargs="+", default=[], metavar="TEXT",
                        help="run only the contenders whose name contains one of these (and the "
                             "references: tuned Keras and the bare 1-step loop)")
    args = parser.parse_args()
    logging.getLogger("trainstack").setLevel(logging.WARNING)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores; TensorFlow {tf.__version__}, "
          f"Keras {keras.__version__}; batch {BATCH}")
    blocks = {w: measure(w, args.rounds, args.epochs, args.steps, args.only) for w in args.workloads}
    speed = {w: {name: steps_per_s(times, args.steps) for name, times in blocks[w].items()}
             for w in args.workloads}
    best = {w: max(KERAS_TUNED, key=speed[w].get) for w in args.workloads}
    print("\nsteps/s (median over epochs); ratio to Keras at its best / to the bare 1-step loop "
          "(median over rounds of the ratio within a round)")
    print("Keras at its best: " + "; ".join(f"{w}: {best[w]}" for w in args.workloads) + "\n")
    print("| contender | " + " | ".join(args.workloads) + " |")
    print("|---|" + "---|" * len(args.workloads))
    for name in blocks[args.workloads[0]]:
        cells = [f"{speed[w][name]:.0f} ({ratio(blocks[w], name, best[w]):.2f}x / "
                 f"{ratio(blocks[w], name, BARE):.2f}x)" for w in args.workloads]
        print(f"| {name} | " + " | ".join(cells) + " |")
    print_goals({w: goals(w, blocks[w], speed[w], best[w], args.steps) for w in args.workloads})


def print_goals(measured: dict[str, dict[str, tuple[float, float, str]]]) -> None:
    """The goals table: one row per goal, one column per workload ("-" where not a goal)."""
    workloads = list(measured)
    print("\n| goal (issues 14, 28) | target | " + " | ".join(workloads) + " |")
    print("|---|---|" + "---|" * len(workloads))
    for goal in dict.fromkeys(g for w in workloads for g in measured[w]):
        target = next(measured[w][goal][1] for w in workloads if goal in measured[w])
        cells = []
        for w in workloads:
            value, _, note = measured[w].get(goal, (None, None, ""))
            cells.append("-" if value is None else f"{value:.2f}x {'met' if value >= target else 'not met'}"
                         + (f" ({note})" if note else ""))
        print(f"| {goal} | >= {target}x | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
