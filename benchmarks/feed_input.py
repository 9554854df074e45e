"""FeedInput reading the next batch while a step computes, against reading it between steps, and
against TFDatasetInput, on keras_compare.py's MLP.

    python benchmarks/feed_input.py [--rounds 10] [--epochs 4] [--steps 300]

Two dataflows of 20 batches of 64: ``plain`` yields keras_compare's arrays as they are (the work
per batch is FeedInput's own: read, check, convert), ``noisy`` adds Gaussian noise to each batch in
NumPy first (about 0.45 ms per batch on the machine of benchmarks/README.md, holding the GIL: an
in-process augmentation; the script prints what it costs on yours).
Contenders: ``FeedInput`` (reads ahead, the default), ``FeedInput(prefetch=False)`` over each, and
``TFDatasetInput`` over keras_compare's dataset, whose elements are whole batches: its step is
traced with a static batch size, where a FeedInput's has the model's ``inputs()``, ``[None, 784]``
(the gradient of a mean then computes the batch size at run time: eight more small ops). A last
contender, FeedInput over ``plain`` with the batch size declared in ``inputs()``, shows that part. All train with ``launch_train_with_config``,
``SimpleTrainer`` and the default callbacks and monitors, in rounds (``_rounds.py``); a ratio is
the median over rounds of the ratio of two contenders' blocks in one round.
"""
from __future__ import annotations

import argparse
import functools
import logging
import os
import platform
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from _rounds import add_round_arguments, ratio, run_rounds, steps_per_s  # noqa: E402
from keras_compare import Contender, dataset, make_batches, trainstack_run  # noqa: E402

from trainstack.inputs import FeedInput, TFDatasetInput  # noqa: E402

REFERENCE = "TFDatasetInput"
STATIC = "FeedInput, plain, inputs() with the batch size"
#: each row compared with the one it differs from in one thing (reading ahead; the graph)
TWINS = {"FeedInput, plain": "FeedInput(prefetch=False), plain",
         "FeedInput, noisy": "FeedInput(prefetch=False), noisy",
         STATIC: "FeedInput, plain"}


class Noisy:
    """``batches`` with Gaussian noise added to each ``x``, in NumPy, as each batch is read."""

    def __init__(self, batches: list) -> None:
        self.batches = batches
        self.rng = np.random.default_rng(0)

    def __len__(self) -> int:
        return len(self.batches)

    def __iter__(self):
        for x, label in self.batches:
            yield x + self.rng.standard_normal(x.shape, np.float32) * np.float32(0.1), label


def contenders(batches: list) -> dict[str, Contender]:
    inputs = {
        REFERENCE: lambda: TFDatasetInput(dataset(batches)),
        "FeedInput, plain": lambda: FeedInput(batches),
        "FeedInput(prefetch=False), plain": lambda: FeedInput(batches, prefetch=False),
        "FeedInput, noisy": lambda: FeedInput(Noisy(batches)),
        "FeedInput(prefetch=False), noisy": lambda: FeedInput(Noisy(batches), prefetch=False),
    }
    runs = {name: trainstack_run("mlp", batches, make) for name, make in inputs.items()}
    # the graph, not the input: TFDatasetInput's step has the dataset's static batch size
    runs[STATIC] = trainstack_run("mlp", batches, inputs["FeedInput, plain"], static_batch=True)
    return runs


def noisy_cost(batches: list, n: int = 200) -> float:
    """Microseconds per batch of ``Noisy`` alone."""
    it = iter(Noisy(batches * (n // len(batches) + 1)))
    start = time.perf_counter()
    for _ in range(n):
        next(it)
    return (time.perf_counter() - start) / n * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_round_arguments(parser, rounds=10, steps=300)
    args = parser.parse_args()
    logging.getLogger("trainstack").setLevel(logging.WARNING)
    batches = make_batches("mlp")
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores; TensorFlow {tf.__version__}; "
          f"load average {os.getloadavg()[0]:.1f}; noisy: {noisy_cost(batches):.0f} us per batch")
    runs = {name: functools.partial(block, args.epochs, args.steps) for name, block in contenders(batches).items()}
    blocks = run_rounds(runs, args.rounds, "mlp")
    print(f"\nload average {os.getloadavg()[0]:.1f}; steps/s (median over epochs); "
          f"ratios are medians over rounds of the ratio within a round\n")
    print(f"| contender | steps/s | / {REFERENCE} | / the row it differs from in one thing |")
    print("|---|---|---|---|")
    for name in blocks:
        twin = TWINS.get(name)
        versus = f"{ratio(blocks, name, twin):.2f}x ({twin})" if twin in blocks else "-"
        print(f"| {name} | {steps_per_s(blocks[name], args.steps):.0f} | "
              f"{ratio(blocks, name, REFERENCE):.2f}x | {versus} |")


if __name__ == "__main__":
    main()
