"""Start-up: time from process start to the end of set-up and to the end of the first step,
trainstack against Keras 3 ``fit``, each run in a fresh process.

    python benchmarks/startup.py [--rounds 5] [--cases mlp convnet ...] [--steps 5]

Each case trains the same model (an MLP 784-256-10 or a small 28x28 convnet, SGD 0.01, a
``tf.data`` input of batches of 64) for ``--steps`` steps, as a new user would: trainstack with
``launch_train_with_config`` + ``SimpleTrainer`` + ``TFDatasetInput`` and the default callbacks
and monitors; Keras with ``compile`` + ``fit`` at its defaults (progress bar included). The
processes alternate (one of each per round, in turn), so that a machine whose speed drifts
slows neighbours alike; a ratio is the median over rounds of the two processes' times in the
same round. One process of each library runs first, not counted, and the processes may write
bytecode: an installed package has its ``.pyc`` files, a source tree's may be stale.

Measured in each process, from the moment it was started (``/proc/self/stat``, so the
interpreter's own start and every import count):
- ``setup``: until training begins (Keras' ``on_train_begin``; trainstack's ``before_train``);
- ``first step``: until the first step has run (``on_train_batch_end`` / ``trigger_step``);
- ``traces``: how many times the model's forward function was traced (a Python call of its
  first layer's ``call``, which happens once per trace of a graph that runs the model; Keras'
  symbolic build counts too);
- ``peak RSS`` (``ru_maxrss``).

The cases:
- ``mlp``, ``convnet``: the default callbacks;
- ``mlp-inference``: with an ``InferenceRunner`` (``ScalarStats``) over a validation
  dataflow, against Keras ``fit(validation_data=...)``;
- ``mlp-2towers``: ``SyncMultiGPUTrainerReplicated`` over two logical CPUs, against Keras ``fit``
  under ``MirroredStrategy`` over the same two;
- ``mlp-tensorpack``: the MLP as a tensorpack model (``trainstack.tensorpack``:
  ``FullyConnected`` layers, a TF1 optimizer), against Keras ``fit``.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from typing import Any

BATCH, LEARNING_RATE = 64, 0.01
CASES = ["mlp", "convnet", "mlp-inference", "mlp-2towers", "mlp-tensorpack"]


# -- in the child process ---------------------------------------------------------------------------
def process_start() -> float:
    """This process's start, on the ``time.time()`` clock (Linux: ``/proc/self/stat``)."""
    with open("/proc/self/stat") as f:
        ticks = int(f.read().rsplit(")", 1)[1].split()[19])
    with open("/proc/stat") as f:
        boot = next(int(line.split()[1]) for line in f if line.startswith("btime"))
    return boot + ticks / os.sysconf("SC_CLK_TCK")


def child(case: str, library: str, steps: int) -> dict[str, Any]:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    marks: dict[str, float] = {}
    if case == "mlp-2towers":
        import tensorflow as tf

        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    import keras
    import numpy as np
    import tensorflow as tf

    workload = "convnet" if case == "convnet" else "mlp"
    shape = [784] if workload == "mlp" else [28, 28, 1]
    traces = [0]

    class CountingDense(keras.layers.Dense):
        """A Dense layer that counts the Python calls of its ``call``: one per trace."""

        def call(self, inputs: Any, training: Any = None) -> Any:
            traces[0] += 1
            return super().call(inputs, training=training)

    def make_layers() -> list[Any]:
        keras.utils.set_random_seed(0)
        if workload == "mlp":
            return [CountingDense(256, activation="relu"), keras.layers.Dense(10)]
        return [keras.layers.Conv2D(16, 3, padding="same", activation="relu"),
                keras.layers.Conv2D(32, 3, strides=2, padding="same", activation="relu"),
                keras.layers.GlobalAveragePooling2D(), CountingDense(10)]

    rng = np.random.default_rng(0)
    x = rng.normal(size=[8 * BATCH, *shape]).astype("float32")
    y = rng.integers(0, 10, size=8 * BATCH).astype("int32")

    def dataset() -> tf.data.Dataset:
        return tf.data.Dataset.from_tensor_slices((x, y)).batch(BATCH).repeat().prefetch(tf.data.AUTOTUNE)

    if library == "keras":
        class Probe(keras.callbacks.Callback):
            def on_train_begin(self, logs: Any = None) -> None:
                marks["setup"] = time.time()

            def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
                marks.setdefault("first step", time.time())

        def build() -> Any:
            model = keras.Sequential([keras.Input(shape), *make_layers()])
            model.compile(optimizer=keras.optimizers.SGD(LEARNING_RATE),
                          loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
            return model

        if case == "mlp-2towers":
            with tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]).scope():
                model = build()
        else:
            model = build()
        validation = {"validation_data": dataset().take(4)} if case == "mlp-inference" else {}
        model.fit(dataset(), epochs=1, steps_per_epoch=steps, callbacks=[Probe()], **validation)
    else:
        from trainstack.inputs import TFDatasetInput
        from trainstack.loop import Callback

        class TSProbe(Callback):
            def _before_train(self) -> None:
                marks["setup"] = time.time()

            def _trigger_step(self) -> None:
                marks.setdefault("first step", time.time())

        if case == "mlp-tensorpack":
            from trainstack.tensorpack import (
                FullyConnected,
                ModelDesc,
                SimpleTrainer,
                TrainConfig,
                launch_train_with_config,
                tfv1,
            )

            class TPModel(ModelDesc):
                def inputs(self):
                    return [tfv1.TensorSpec([None, 784], tf.float32, "x"),
                            tfv1.TensorSpec([None], tf.int32, "label")]

                def build_graph(self, image, label):
                    traces[0] += 1
                    hidden = FullyConnected("fc0", image, 256, activation=tf.nn.relu)
                    logits = FullyConnected("fc1", hidden, 10)
                    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
                        labels=label, logits=logits), name="cost")

                def optimizer(self):
                    return tfv1.train.GradientDescentOptimizer(LEARNING_RATE)

            config = TrainConfig(model=TPModel(), data=TFDatasetInput(dataset()), callbacks=[TSProbe()],
                                 steps_per_epoch=steps, max_epoch=1)
            launch_train_with_config(config, SimpleTrainer())
        else:
            from trainstack.towers import (
                InferenceRunner,
                ModelDesc,
                ScalarStats,
                SimpleTrainer,
                SyncMultiGPUTrainerReplicated,
                TrainConfig,
                launch_train_with_config,
            )

            class Model(ModelDesc):
                def __init__(self) -> None:
                    self.layers = make_layers()

                def inputs(self):
                    return [tf.TensorSpec([None, *shape], tf.float32, "x"),
                            tf.TensorSpec([None], tf.int32, "label")]

                def build_graph(self, image, label):
                    for layer in self.layers:
                        image = layer(image)
                    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
                        labels=label, logits=image), name="cost")

                def optimizer(self):
                    return keras.optimizers.SGD(LEARNING_RATE)

            callbacks: list[Any] = [TSProbe()]
            if case == "mlp-inference":
                validation = [(x[i:i + BATCH], y[i:i + BATCH]) for i in range(0, 4 * BATCH, BATCH)]
                callbacks.append(InferenceRunner(validation, [ScalarStats("cost")]))
            trainer = SyncMultiGPUTrainerReplicated(2) if case == "mlp-2towers" else SimpleTrainer()
            data = TFDatasetInput(dataset())
            config = TrainConfig(model=Model(), data=data, callbacks=callbacks, steps_per_epoch=steps,
                                 max_epoch=1)
            launch_train_with_config(config, trainer)
    start = process_start()
    return {"setup": marks["setup"] - start, "first step": marks["first step"] - start,
            "traces": traces[0], "peak RSS MiB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


# -- in the parent ------------------------------------------------------------------------------------
def run_child(case: str, library: str, steps: int, logdir: str) -> dict[str, Any]:
    # bytecode may be written: an installed package has its .pyc files (pip compiles them), so a
    # source tree whose stale .pyc would be compiled again in every process is not measured
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    result = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--child", case, library, "--steps", str(steps)],
        capture_output=True, text=True, cwd=logdir, env={**env, "TF_CPP_MIN_LOG_LEVEL": "2"})
    if result.returncode != 0:
        raise RuntimeError(f"{library} {case} failed (exit {result.returncode}):\n{result.stderr[-4000:]}")
    last = [line for line in result.stdout.splitlines() if line.startswith("STARTUP ")][-1]
    return json.loads(last[len("STARTUP "):])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=5, help="steps trained in each process")
    parser.add_argument("--cases", nargs="+", default=CASES, choices=CASES)
    parser.add_argument("--child", nargs=2, metavar=("CASE", "LIBRARY"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print("STARTUP " + json.dumps(child(args.child[0], args.child[1], args.steps)), flush=True)
        return

    import tempfile

    import tensorflow as tf

    print(f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
          f"TensorFlow {tf.__version__}; {args.rounds} rounds, {args.steps} steps per process", flush=True)
    rows = []
    with tempfile.TemporaryDirectory() as logdir:
        for library in ("keras", "trainstack"):  # a warm-up, not counted: .pyc files, the disk cache
            run_child(args.cases[0], library, args.steps, logdir)
        for case in args.cases:
            runs: dict[str, list[dict[str, Any]]] = {"keras": [], "trainstack": []}
            for r in range(args.rounds):
                for library in (("keras", "trainstack") if r % 2 == 0 else ("trainstack", "keras")):
                    runs[library].append(run_child(case, library, args.steps, logdir))
                print(f"  {case}: round {r + 1}/{args.rounds} done", flush=True)
            rows.append((case, runs))

    def median(runs: list[dict[str, Any]], key: str) -> float:
        return statistics.median(run[key] for run in runs)

    def paired(runs: dict[str, list[dict[str, Any]]], key: str) -> float:
        return statistics.median(t[key] / k[key] for t, k in zip(runs["trainstack"], runs["keras"]))

    print("\n| case | Keras setup / first step (s) | trainstack setup / first step (s) | "
          "first step ratio | setup ratio | traces Keras / trainstack | peak RSS MiB Keras / trainstack |")
    print("|---|---|---|---|---|---|---|")
    for case, runs in rows:
        k, t = runs["keras"], runs["trainstack"]
        print(f"| {case} | {median(k, 'setup'):.2f} / {median(k, 'first step'):.2f} "
              f"| {median(t, 'setup'):.2f} / {median(t, 'first step'):.2f} "
              f"| {paired(runs, 'first step'):.2f}x | {paired(runs, 'setup'):.2f}x "
              f"| {max(r['traces'] for r in k)} / {max(r['traces'] for r in t)} "
              f"| {median(k, 'peak RSS MiB'):.0f} / {median(t, 'peak RSS MiB'):.0f} |")


if __name__ == "__main__":
    main()
