"""trainstack.dataflow vs tensorpack 0.11's dataflow vs tf.data, on the same pipelines.

    python benchmarks/dataflow_compare.py [--rounds 5] [--seconds 3] [--pipelines augment light large]

Pipelines (their work is in ``_dataflow_pipelines.py``):

- ``augment-1w``, ``augment-2w``: decode + augment in NumPy (a few ms per datapoint, mostly
  holding the GIL) in 1 or 2 worker processes, then batches of 64
  (``BatchData(MultiProcessMapData(...), 64)``); tf.data runs the same Python function through
  ``py_function`` with ``num_parallel_calls`` (threads), and as native TF ops;
- ``light``: a map of about 50 microseconds in 2 workers, datapoint by datapoint: serialization
  and transfer dominate;
- ``large``: one 4 MB float32 array per datapoint from 2 workers (``MultiProcessRunnerZMQ``):
  copying dominates;
- ``small``: small datapoints (``[64 float32, int]``, made in microseconds) from 2 workers
  (``MultiProcessRunnerZMQ``): the cost per datapoint of the transport itself;
- ``large-sharded``, ``small-sharded``: the same datapoints through trainstack's
  ``MultiProcessDataFlow`` (the dataflow under ``MultiProcessInput``: each worker runs its own
  dataflow, from ``worker_factory``), against tensorpack's ``MultiProcessRunnerZMQ`` (tensorpack
  has no dataflow of sharded workers; for endless i.i.d. datapoints the runner is what a
  tensorpack user would use);
- ``lmdb``: tensorpack's "Efficient DataFlow" recipe: a dataset of 4096 images written once into
  one LMDB file by each library's ``LMDBSerializer.save``, read back sequentially
  (``LMDBSerializer.load(path, shuffle=False)``, repeated), shuffled locally
  (``LocallyShuffleData(df, 1000)``), decoded in 2 worker processes (``MultiProcessMapData``),
  batched by 64. tf.data has no LMDB reader: the tf.data columns are empty on this row;
- ``train``: the full path into a training step: ``light``'s datapoints batched by 64 train an
  MLP 256-128-10 with ``launch_train_with_config(..., SimpleTrainer())`` and the default callbacks
  and monitors, fed the tensorpack way, ``QueueInput(BatchData(MultiProcessMapData(...), 64))``
  (trainstack's QueueInput over trainstack's or tensorpack's dataflow), or by ``TFDatasetInput``
  over the tf.data pipelines; steps/s.

Contenders run in rounds, one block each per round (``--seconds`` of reading after a warm-up
that includes the workers' start-up); a ratio is the median over rounds of the ratio of two
contenders' rates within a round, as in keras_compare.py. Needs tensorpack 0.11 and TensorFlow
(``pip install tensorpack==0.11`` beside trainstack).
"""
from __future__ import annotations

import argparse
import atexit
import gc
import logging
import os
import platform
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import _dataflow_pipelines as work  # noqa: E402
import numpy as np  # noqa: E402

BATCH = 64
# pipeline -> (what one item is, items per datapoint read)
UNITS = {"augment-1w": "batches", "augment-2w": "batches", "light": "datapoints", "large": "datapoints",
         "small": "datapoints", "large-sharded": "datapoints", "small-sharded": "datapoints",
         "lmdb": "batches", "train": "steps"}
TRAIN_STEPS = 50  # steps per epoch of the train pipeline (its rate is taken over whole epochs)
LMDB_DIR = tempfile.mkdtemp(prefix="dataflow_compare_")  # one LMDB file per library, written once
atexit.register(shutil.rmtree, LMDB_DIR, ignore_errors=True)


def lmdb_file(lib: Any) -> str:
    """The LMDB file ``lib``'s ``LMDBSerializer.save`` wrote of ``work.RawImages()`` (written on
    first use: the write is not timed)."""
    path = os.path.join(LMDB_DIR, lib.__name__.split(".")[0] + ".lmdb")
    if not os.path.exists(path):
        lib.LMDBSerializer.save(lib.DataFromList(list(work.RawImages()), shuffle=False), path)
    return path


# -- the contenders: each returns an iterable to read, and a function that releases it ------------
def dataflow_pipeline(lib: Any, name: str) -> tuple[Iterable, Callable[[], None]]:
    """The pipeline ``name`` built from ``lib`` (trainstack.dataflow or tensorpack.dataflow, which
    share tensorpack's API)."""
    if name.startswith("augment"):
        workers = int(name[-2])
        df = lib.BatchData(lib.MultiProcessMapData(work.Indices(), num_proc=workers, map_func=work.augment),
                           BATCH)
    elif name == "lmdb":
        df = lib.LMDBSerializer.load(lmdb_file(lib), shuffle=False)
        df = lib.LocallyShuffleData(lib.RepeatedData(df, -1), 1000)
        df = lib.BatchData(lib.MultiProcessMapData(df, num_proc=2, map_func=work.decode), BATCH)
    elif name == "light":
        df = lib.MultiProcessMapData(work.Indices(), num_proc=2, map_func=work.light)
    elif name == "train":  # not reset: the QueueInput does that
        mapped = lib.MultiProcessMapData(work.Indices(), num_proc=2, map_func=work.light)
        # trainstack's QueueInput stops trainstack's workers after training; tensorpack's stop in
        # __del__, called here so that none outlives its block
        return lib.BatchData(mapped, BATCH), getattr(mapped, "close", None) or mapped.__del__
    elif name == "small":
        df = lib.MultiProcessRunnerZMQ(work.SmallPoints(), num_proc=2)
    elif name.endswith("-sharded"):
        large = name.startswith("large")
        if hasattr(lib, "MultiProcessDataFlow"):
            df = lib.MultiProcessDataFlow(worker_factory=work.large_worker if large else work.small_worker,
                                          num_workers=2)
        else:  # tensorpack
            df = lib.MultiProcessRunnerZMQ(work.LargeArrays() if large else work.SmallPoints(), num_proc=2)
    else:
        df = lib.MultiProcessRunnerZMQ(work.LargeArrays(), num_proc=2)
    df.reset_state()

    def release() -> None:
        close = getattr(df, "close", None) or getattr(getattr(df, "ds", None), "close", None)
        if close is not None:  # trainstack's: stops the workers now
            close()

    return df, release


def tfdata_pipeline(name: str, native: bool) -> tuple[Iterable, Callable[[], None]]:
    import tensorflow as tf

    def python_map(func: Callable, dtypes: list) -> Callable:
        def call(i: tf.Tensor) -> list[tf.Tensor]:
            return tf.py_function(lambda j: func([int(j)]), [i], dtypes)
        return call

    indices = tf.data.Dataset.range(2 ** 62)
    if name.startswith("augment"):
        workers = int(name[-2])
        if native:
            def native_augment(i: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
                seed = tf.stack([i, i])
                img = tf.random.stateless_uniform(work.IMAGE, seed, 0, 256, dtype=tf.int32)
                crop = tf.cast(tf.image.stateless_random_crop(img, [work.CROP, work.CROP, 3], seed), tf.float32)
                crop = tf.image.stateless_random_flip_left_right(crop, seed)
                blurred = tf.nn.avg_pool2d(crop[None], 3, 1, "SAME")[0]
                mean, var = tf.nn.moments(blurred, [0, 1])
                return (blurred - mean) / (tf.sqrt(var) + 1e-5), i % 10
            ds = indices.map(native_augment, num_parallel_calls=workers)
        else:
            ds = indices.map(python_map(work.augment, [tf.float32, tf.int64]), num_parallel_calls=workers)
        ds = ds.batch(BATCH)
    elif name in ("light", "train"):
        if native:
            def native_light(i: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
                x = tf.range(256, dtype=tf.float32) * tf.cast(i, tf.float32)
                for _ in range(4):
                    x = tf.sqrt(tf.abs(x) + 1.0)
                return x, i
            ds = indices.map(native_light, num_parallel_calls=2)
        else:
            ds = indices.map(python_map(work.light, [tf.float32, tf.int64]), num_parallel_calls=2)
        if name == "train":
            ds = ds.map(lambda x, i: (tf.ensure_shape(x, [256]), tf.ensure_shape(i, []))).batch(BATCH)
            return ds.prefetch(tf.data.AUTOTUNE), lambda: None
    elif name in ("small", "small-sharded"):
        if native:
            ds = indices.map(lambda i: (tf.range(64, dtype=tf.float32) * tf.cast(i, tf.float32), i),
                             num_parallel_calls=2)
        else:
            ds = indices.map(python_map(lambda dp: [np.arange(64, dtype=np.float32) * dp[0], np.int64(dp[0])],
                                        [tf.float32, tf.int64]), num_parallel_calls=2)
    else:
        if native:
            ds = indices.map(lambda i: tf.fill([work.LARGE_FLOATS], tf.cast(i, tf.float32)), num_parallel_calls=2)
        else:
            ds = indices.map(python_map(lambda dp: [np.full(work.LARGE_FLOATS, dp[0], np.float32)], [tf.float32]),
                             num_parallel_calls=2)
    ds = ds.prefetch(tf.data.AUTOTUNE)
    return (elem for elem in ds), lambda: None


def contenders(name: str) -> dict[str, Callable[[], tuple[Iterable, Callable[[], None]]]]:
    import tensorpack.dataflow as tp_df

    import trainstack.dataflow as ts_df
    found = {"trainstack": lambda: dataflow_pipeline(ts_df, name),
             "tensorpack 0.11": lambda: dataflow_pipeline(tp_df, name)}
    if name != "lmdb":  # tf.data reads no LMDB
        found["tf.data, py_function"] = lambda: tfdata_pipeline(name, native=False)
        found["tf.data, native ops"] = lambda: tfdata_pipeline(name, native=True)
    return found


# -- timing ----------------------------------------------------------------------------------------
def train_rate(make: Callable[[], tuple[Any, Callable[[], None]]], seconds: float) -> float:
    """Steps per second of a fresh training run fed by ``make()``'s pipeline (a dataflow goes
    through a ``QueueInput``, a ``tf.data.Dataset`` through a ``TFDatasetInput``), over the
    epochs after the first (which traces the step and starts the workers) until ``seconds``
    have passed."""
    import keras
    import tensorflow as tf
    from _rounds import EpochClock

    from trainstack.inputs import QueueInput, TFDatasetInput
    from trainstack.loop import StopTraining
    from trainstack.towers import ModelDesc, SimpleTrainer, TrainConfig, launch_train_with_config

    class MLP(ModelDesc):
        def __init__(self) -> None:
            self.layers = [keras.layers.Dense(128, activation="relu"), keras.layers.Dense(10)]

        def inputs(self) -> list[tf.TensorSpec]:
            return [tf.TensorSpec([None, 256], tf.float32, "x"), tf.TensorSpec([None], tf.int64, "label")]

        def build_graph(self, x: tf.Tensor, label: tf.Tensor) -> tf.Tensor:
            logits = self.layers[1](self.layers[0](x / 2.0))
            cost = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=label % 10, logits=logits)
            return tf.reduce_mean(cost, name="cost")

        def optimizer(self) -> Any:
            return keras.optimizers.SGD(0.01)

    class Clock(EpochClock):
        def _after_epoch(self) -> None:
            super()._after_epoch()
            if sum(self.times[1:]) >= seconds:
                raise StopTraining()

    pipeline, release = make()
    data = TFDatasetInput(pipeline) if isinstance(pipeline, tf.data.Dataset) else QueueInput(pipeline)
    clock = Clock()
    try:
        launch_train_with_config(TrainConfig(model=MLP(), data=data, callbacks=[clock],
                                             steps_per_epoch=TRAIN_STEPS, max_epoch=10 ** 6), SimpleTrainer())
    finally:
        release()
        gc.collect()
    return TRAIN_STEPS * len(clock.times[1:]) / sum(clock.times[1:])


def rate(make: Callable[[], tuple[Iterable, Callable[[], None]]], seconds: float, warmup: int) -> float:
    """Items per second read from a fresh pipeline during ``seconds``, after ``warmup`` items
    (which include the workers' start-up)."""
    pipeline, release = make()
    try:
        it: Iterator = iter(pipeline)
        for _ in range(warmup):
            next(it)
        count, start = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - start) < seconds:
            next(it)
            count += 1
        return count / elapsed
    finally:
        del pipeline
        release()
        gc.collect()


def measure(name: str, rounds: int, seconds: float) -> dict[str, list[float]]:
    makers = contenders(name)
    warmup = 3 if UNITS[name] == "batches" else 50
    rates: dict[str, list[float]] = {c: [] for c in makers}
    for r in range(rounds):
        for contender, make in makers.items():
            rates[contender].append(train_rate(make, seconds) if name == "train" else rate(make, seconds, warmup))
        print(f"  {name}: round {r + 1}/{rounds} done", flush=True)
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pipelines", nargs="+", default=list(UNITS), choices=list(UNITS))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=3.0, help="reading time per block")
    args = parser.parse_args()
    import tensorflow as tf
    logging.getLogger("trainstack").setLevel(logging.WARNING)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}; TensorFlow {tf.__version__}")
    results = {name: measure(name, args.rounds, args.seconds) for name in args.pipelines}
    print("\nitems/s (median over rounds); in brackets, trainstack's rate over the contender's "
          "(median over rounds of the ratio within a round)\n")
    names = max((list(rates) for rates in results.values()), key=len)
    print("| pipeline | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for name, rates in results.items():
        cells = []
        for contender in names:
            if contender not in rates:
                cells.append("—")
                continue
            within = statistics.median(a / b for a, b in zip(rates["trainstack"], rates[contender]))
            cells.append(f"{statistics.median(rates[contender]):.0f}"
                         + ("" if contender == "trainstack" else f" ({within:.2f}x)"))
        print(f"| {name} ({UNITS[name]}/s) | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
