"""Input throughput (batches/s) of FeedInput, QueueInput, TFDatasetInput and MultiProcessInput.

Every input reads the same dataflow: datapoint ``i`` becomes a batch of 64
float32 images of 32x32x3 and their labels, through a transform with
``--work-ms`` milliseconds of pure-Python work (holding the GIL, like
typical augmentation code) plus the NumPy work of building the batch.
FeedInput, QueueInput and TFDatasetInput (``dataflow_to_dataset`` +
prefetch) run the transform in the trainer's process; MultiProcessInput runs
it in 1 and in 2 worker processes (``map_func``). Each input is read by an
``InputReader`` whose step sums the batch on the device, so what is measured
is how fast batches reach the step.

    python benchmarks/input_throughput.py [--steps 300] [--repeat 3] [--work-ms 2]

Prints batches/s (best of ``--repeat`` interleaved runs, after ``--warmup``
steps that include start-up and tracing), each input's ratio to FeedInput,
and the speed-up of MultiProcessInput from 1 to 2 workers, with the machine's
load average. Workers can only help when there are idle cores: each batch
also costs the trainer's process a msgpack decode and a pipe read.

Results, ``python benchmarks/input_throughput.py`` (defaults), on the 2-core
development VM while other jobs kept its load average at 8-9, i.e. with no
idle core: a worker process there gets a fraction of a core, so these numbers
show the inputs' overhead, not multi-process scaling::

    input                   batches/s  vs FeedInput
    FeedInput                   194.6          1.00
    QueueInput                  239.1          1.23
    TFDatasetInput              299.1          1.54
    MultiProcessInput(1)        123.5          0.63
    MultiProcessInput(2)        113.5          0.58
    MultiProcessInput 1 -> 2 workers: x0.92
"""
from __future__ import annotations

# Worker processes (spawn) re-import this script: keep TensorFlow and trainstack out of its
# top level, so that they start without importing them.
import argparse
import logging
import os
import sys
import time

import numpy as np

BATCH, SHAPE = 64, (32, 32, 3)


def busy(iterations: int) -> int:
    """Pure-Python work: the kind that holds the GIL."""
    total = 0
    for i in range(iterations):
        total += i * i % 7
    return total


def calibrate(work_ms: float) -> int:
    """Iterations of :func:`busy` that take about ``work_ms`` milliseconds here."""
    n = 20_000
    start = time.perf_counter()
    busy(n)
    return max(1, int(n * work_ms / 1e3 / (time.perf_counter() - start)))


class Ids:
    """The source dataflow: datapoint ``i`` is just ``i`` (cheap, so sharding it is free)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __iter__(self):
        return iter(range(self.n))


class Transform:
    """Datapoint id -> [images (64, 32, 32, 3) float32, labels (64,) int32], with Python-heavy work."""

    def __init__(self, iterations: int) -> None:
        self.iterations = iterations

    def __call__(self, i: int) -> list:
        rng = np.random.default_rng(i)
        images = rng.random((BATCH, *SHAPE), dtype=np.float32)
        labels = rng.integers(0, 10, BATCH, dtype=np.int32)
        busy(self.iterations)
        return [images, labels]


class Mapped:
    """``transform`` applied to each datapoint of ``source``, in the process that iterates it."""

    def __init__(self, source, transform) -> None:
        self.source, self.transform = source, transform

    def __len__(self) -> int:
        return len(self.source)

    def __iter__(self):
        for dp in self.source:
            yield self.transform(dp)


def measure(make_source, warmup: int, steps: int) -> float:
    """Batches/s of the source made by ``make_source()``, over ``steps`` steps after ``warmup``."""
    import tensorflow as tf

    from trainstack.inputs import InputReader
    from trainstack.loop import Callback

    class Clock(Callback):
        def _trigger_step(self):
            if self.global_step == warmup:
                self.start = time.perf_counter()
            elif self.global_step == warmup + steps:
                self.stop = time.perf_counter()

    signature = [tf.TensorSpec((BATCH, *SHAPE), tf.float32, name="images"),
                 tf.TensorSpec((BATCH,), tf.int32, name="labels")]
    clock = Clock()
    reader = InputReader(make_source(signature), signature, keep=False,
                         reduce=lambda t: tf.reduce_sum(t[0]) + tf.cast(tf.reduce_sum(t[1]), tf.float32))
    reader.read(steps_per_epoch=warmup + steps, max_epoch=1, callbacks=[clock])
    return steps / (clock.stop - clock.start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300, help="measured steps per run")
    parser.add_argument("--warmup", type=int, default=50, help="steps before measuring (start-up, tracing)")
    parser.add_argument("--repeat", type=int, default=3, help="best of N")
    parser.add_argument("--work-ms", type=float, default=2.0, help="pure-Python work per batch, ms")
    parser.add_argument("--queue-size", type=int, default=16, help="queue of the queue-based inputs")
    args = parser.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    logging.getLogger("trainstack").setLevel(logging.WARNING)

    import tensorflow as tf

    from trainstack.inputs import FeedInput, MultiProcessInput, QueueInput, TFDatasetInput, dataflow_to_dataset

    transform = Transform(calibrate(args.work_ms))
    n = args.warmup + args.steps
    q = args.queue_size
    inputs = {
        "FeedInput": lambda sig: FeedInput(Mapped(Ids(n), transform)),
        "QueueInput": lambda sig: QueueInput(Mapped(Ids(n), transform), queue_size=q),
        "TFDatasetInput": lambda sig: TFDatasetInput(
            dataflow_to_dataset(Mapped(Ids(n), transform), sig).prefetch(q)),
        "MultiProcessInput(1)": lambda sig: MultiProcessInput(Ids(n), 1, map_func=transform, queue_size=q),
        "MultiProcessInput(2)": lambda sig: MultiProcessInput(Ids(n), 2, map_func=transform, queue_size=q),
    }

    start = time.perf_counter()
    per_batch = min(_time_transform(transform) for _ in range(3))
    print(f"$ python {' '.join(sys.argv)}")
    print(f"{os.cpu_count()} CPU cores (load average {os.getloadavg()[0]:.1f}); batches of {BATCH}x"
          f"{'x'.join(map(str, SHAPE))} float32; the transform alone: {per_batch * 1e3:.2f} ms/batch "
          f"({1 / per_batch:.0f} batches/s on one core)")
    print(f"{args.steps} steps after {args.warmup} warm-up steps, best of {args.repeat}")
    best = {name: 0.0 for name in inputs}
    for _ in range(args.repeat):  # interleaved, so that a busy machine slows all alike
        for name, make in inputs.items():
            best[name] = max(best[name], measure(make, args.warmup, args.steps))
    print(f"{'input':<22}{'batches/s':>11}{'vs FeedInput':>14}")
    for name, rate in best.items():
        print(f"{name:<22}{rate:>11.1f}{rate / best['FeedInput']:>14.2f}")
    scaling = best["MultiProcessInput(2)"] / best["MultiProcessInput(1)"]
    print(f"MultiProcessInput 1 -> 2 workers: x{scaling:.2f}")
    print(f"(TensorFlow {tf.__version__}, Python {sys.version.split()[0]}, "
          f"{time.perf_counter() - start:.0f} s, load average {os.getloadavg()[0]:.1f} at the end)")


def _time_transform(transform: Transform, n: int = 20) -> float:
    start = time.perf_counter()
    for i in range(n):
        transform(i)
    return (time.perf_counter() - start) / n


if __name__ == "__main__":
    main()
