"""Steps/s of the multi-GPU trainers with 1, 2 and 4 towers, against SimpleTrainer.

A small convnet (two 3x3 convolutions, global average pooling, a dense layer)
trains on constant in-graph batches (``DummyConstantInput``: no input cost) of
``--batch`` 28x28 images per tower.

- Without GPUs the towers run on 4 logical CPU devices, which share the same
  cores, so more towers cannot be faster: the point is the overhead of the
  multi-tower path itself. Each K-tower trainer is compared with SimpleTrainer
  on one batch of ``K x batch`` images (the same work per step):
  ``vs simple`` = (its images/s) / (SimpleTrainer's images/s at that batch).
- With GPUs (K of them at most) the towers run one per GPU, and ``scaling`` is
  the efficiency against a single GPU: (images/s) / (K x SimpleTrainer's
  images/s at ``--batch`` on one GPU).

    python benchmarks/multitower_overhead.py [--steps 30] [--warmup 5] [--repeat 3] [--batch 32]

Every configuration trains ``--warmup + --steps`` steps in one epoch; the time
of the last ``--steps`` is measured; the best of ``--repeat`` interleaved rounds
is kept.

Results, ``python benchmarks/multitower_overhead.py --steps 100``, 4 logical CPU
devices on the 2-core development VM while other jobs kept its load average near
4 (no GPU was available)::

    trainer                towers   steps/s   images/s  vs simple
    SimpleTrainer               1     214.4       6862       1.00  (batch 32)
    SimpleTrainer               1     144.9       9272       1.00  (batch 64)
    SimpleTrainer               1      68.4       8749       1.00  (batch 128)
    Replicated                  1     224.5       7183       1.05
    Replicated                  2     114.9       7353       0.79
    Replicated                  4      60.5       7738       0.88
    ParameterServer(cpu)        1     205.6       6580       0.96
    ParameterServer(cpu)        2     130.6       8361       0.90
    ParameterServer(cpu)        4     108.2      13856       1.58
    ParameterServer(gpu)        1     217.2       6950       1.01
    ParameterServer(gpu)        2     174.5      11169       1.20
    ParameterServer(gpu)        4      83.5      10683       1.22
    Async                       1     216.2       6919       1.01
    Async                       2     150.9       9658       1.04
    Async                       4      77.3       9892       1.13

On a busy 2-core machine the run-to-run noise (+-30%) exceeds the differences:
the multi-tower path costs no more than the work it replaces (K towers of
``batch`` run about as fast as one tower of ``K x batch``; several small towers
can even be faster, as their ops run concurrently on the inter-op threads).
"""
from __future__ import annotations

import argparse
import logging
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def configure_devices() -> list[str]:
    """The GPUs, else 4 logical CPU devices (configured before TensorFlow starts)."""
    import tensorflow as tf

    from trainstack.towers import logical_cpu_devices

    gpus = tf.config.list_physical_devices("GPU")
    if gpus:
        for gpu in gpus:
            tf.config.experimental.set_memory_growth(gpu, True)
        return [f"/device:GPU:{k}" for k in range(len(gpus))]
    return logical_cpu_devices(4)


def images_per_second(make_trainer, batch: int, towers: int, warmup: int, steps: int) -> float:
    """Train ``warmup + steps`` steps; images/s over the last ``steps``."""
    from convnet_timing import time_training

    elapsed = time_training(make_trainer(), batch, warmup, steps)
    return steps * batch * towers / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--batch", type=int, default=32, help="images per tower")
    args = parser.parse_args()
    devices = configure_devices()
    logging.getLogger("trainstack").setLevel(logging.WARNING)
    from trainstack.towers import (
        AsyncMultiGPUTrainer,
        SimpleTrainer,
        SyncMultiGPUTrainerParameterServer,
        SyncMultiGPUTrainerReplicated,
    )

    on_gpus = devices[0].startswith("/device:GPU")
    counts = [k for k in (1, 2, 4) if k <= len(devices)]
    trainers = {
        "Replicated": lambda k: SyncMultiGPUTrainerReplicated(devices[:k]),
        "ParameterServer(cpu)": lambda k: SyncMultiGPUTrainerParameterServer(devices[:k], ps_device="cpu"),
        "ParameterServer(gpu)": lambda k: SyncMultiGPUTrainerParameterServer(devices[:k], ps_device="gpu"),
        "Async": lambda k: AsyncMultiGPUTrainer(devices[:k]),
    }
    # reference batches: K x batch on one device (CPU), or batch on one GPU
    ref_batches = sorted({args.batch * k for k in counts}) if not on_gpus else [args.batch]
    best: dict[tuple[str, int], float] = {}
    for _ in range(args.repeat):  # interleaved rounds: a busy machine slows all alike
        for b in ref_batches:
            ips = images_per_second(SimpleTrainer, b, 1, args.warmup, args.steps)
            best[("SimpleTrainer", b)] = max(best.get(("SimpleTrainer", b), 0.0), ips)
        for name, make in trainers.items():
            for k in counts:
                ips = images_per_second(lambda k=k, make=make: make(k), args.batch, k, args.warmup, args.steps)
                best[(name, k)] = max(best.get((name, k), 0.0), ips)
    where = f"{len(devices)} GPU(s)" if on_gpus else f"{len(devices)} logical CPU devices on {os.cpu_count()} cores"
    print(f"{where}; batch {args.batch} per tower; {args.steps} steps after {args.warmup}, best of "
          f"{args.repeat}; load average {os.getloadavg()[0]:.1f}")
    print(f"{'trainer':<22}{'towers':>7}{'steps/s':>10}{'images/s':>11}"
          f"{'scaling' if on_gpus else 'vs simple':>11}")
    for b in ref_batches:
        ips = best[("SimpleTrainer", b)]
        print(f"{'SimpleTrainer':<22}{'1':>7}{ips / b:>10.1f}{ips:>11.0f}{'1.00':>11}  (batch {b})")
    for name in trainers:
        for k in counts:
            ips = best[(name, k)]
            ref = (k * best[("SimpleTrainer", args.batch)]) if on_gpus else best[("SimpleTrainer", args.batch * k)]
            print(f"{name:<22}{k:>7}{ips / (args.batch * k):>10.1f}{ips:>11.0f}{ips / ref:>11.2f}")


if __name__ == "__main__":
    main()
