"""Steps/s of DistributedTrainerReplicated with 1 and 2 worker processes on this machine.

Each configuration is one ``python -m trainstack.distributed.launch -n K`` run
of this file in worker mode: every worker trains an MLP (``--width`` hidden
units, two hidden layers) on constant in-graph batches of ``--batch`` rows
(``DummyConstantInput``: no input cost) with MultiWorkerMirroredStrategy
(ring all-reduce over gRPC on CPU, NCCL on GPUs), runs ``--warmup`` steps,
then times ``--steps`` steps; worker 0 reports. ``scaling`` is the efficiency
against one worker: (samples/s with K workers) / (K x samples/s with 1).

    python benchmarks/multiworker_scaling.py [--steps 200] [--warmup 20] [--batch 64] [--width 512]

On this 2-core CPU machine the two workers share the cores, so the number is
the all-reduce's overhead more than a speed-up.

Results on the 2-core development VM (no GPU) while other jobs kept its load
average near 5; ``python benchmarks/multiworker_scaling.py``::

    workers   steps/s  samples/s  scaling   (batch 64 per worker, MLP 256-512-512-10, 400k weights)
          1     306.5      19614     1.00
          2      40.4       5176     0.13

and ``--batch 512 --width 128`` (50k weights)::

    workers   steps/s  samples/s  scaling   (batch 512 per worker)
          1     422.0     216054     1.00
          2     105.0     107561     0.25

A 2-worker step costs one gRPC ring all-reduce of all gradients between two
processes on the same two busy cores (about 10-25 ms here, against 2-4 ms of
compute): on one small CPU host, one process with more threads is faster;
the multi-worker trainer pays off when each worker has its own device or
host. The scaling efficiency of a
multi-GPU host (one process per GPU, NCCL) is measured with::

    for k in 1 2 4 8; do
      CUDA_VISIBLE_DEVICES=... python -m trainstack.distributed.launch -n $k \\
          benchmarks/multiworker_scaling.py --worker --steps 500 --batch 256
    done

(the launcher gives every process all GPUs: make each worker see one, e.g.
``CUDA_VISIBLE_DEVICES=$(python -c "import json,os;print(json.loads(os.environ['TF_CONFIG'])['task']['index'])")``
in a wrapper script), and on several hosts by starting ``--worker`` on each with its
``TF_CONFIG`` (see ``trainstack.distributed.launch``).
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time


def worker(args: argparse.Namespace) -> None:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    from trainstack.distributed import DistributedTrainerReplicated

    trainer = DistributedTrainerReplicated()  # before any TF op
    import keras
    import tensorflow as tf

    from trainstack.inputs import DummyConstantInput

    hidden1, hidden2 = keras.layers.Dense(args.width, "relu"), keras.layers.Dense(args.width, "relu")
    out = keras.layers.Dense(10)

    def cost(x: tf.Tensor, label: tf.Tensor) -> tf.Tensor:
        logits = out(hidden2(hidden1(x)))
        return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=label, logits=logits))

    signature = [tf.TensorSpec([args.batch, 256], tf.float32, "x"),
                 tf.TensorSpec([args.batch], tf.int32, "label")]
    source = DummyConstantInput([[args.batch, 256], [args.batch]])
    trainer.setup_graph(signature, source, cost, lambda: keras.optimizers.SGD(0.01))
    source.reset_state()
    for _ in range(args.warmup):
        trainer.train_op()
    start = time.perf_counter()
    for _ in range(args.steps):
        trainer.train_op()
    float(hidden1.kernel[0, 0])  # wait for the last step
    elapsed = time.perf_counter() - start
    if trainer.is_chief:
        print(f"RESULT workers={trainer.num_workers} steps_per_s={args.steps / elapsed:.3f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--worker", action="store_true", help="run as one worker (TF_CONFIG set)")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--width", type=int, default=512)
    parser.add_argument("--max-workers", type=int, default=2)
    args = parser.parse_args()
    if args.worker:
        return worker(args)
    rates = {}
    for k in range(1, args.max_workers + 1):
        proc = subprocess.run(
            [sys.executable, "-m", "trainstack.distributed.launch", "-n", str(k), __file__, "--worker",
             "--steps", str(args.steps), "--warmup", str(args.warmup), "--batch", str(args.batch),
             "--width", str(args.width)],
            capture_output=True, text=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
        match = re.search(r"RESULT workers=(\d+) steps_per_s=([\d.]+)", proc.stdout)
        if proc.returncode != 0 or match is None:
            sys.exit(f"the {k}-worker run failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
        rates[k] = float(match.group(2))
    print(f"{'workers':>7} {'steps/s':>9} {'samples/s':>10} {'scaling':>8}   (batch {args.batch} per worker)")
    for k, rate in rates.items():
        samples = rate * k * args.batch
        print(f"{k:>7} {rate:>9.1f} {samples:>10.0f} {samples / (k * rates[1] * args.batch):>8.2f}")


if __name__ == "__main__":
    main()
