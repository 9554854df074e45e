"""Steps/s of HorovodTrainer with 1 and 2 processes (Gloo), and the scaling efficiency.

Each process trains a small convnet (two 3x3 convolutions, global average
pooling, a dense layer) on constant in-graph batches (``DummyConstantInput``:
no input cost) of ``--batch`` 28x28 images; the total batch per step is
``--batch`` x processes. ``efficiency`` = images/s(N) / (N x images/s(1)):
1.00 is perfect scaling.

    python benchmarks/horovod_scaling.py [--np 1 2] [--steps 100] [--warmup 10] [--batch 32]

Needs Horovod (``python scripts/install_horovod.py``). It runs
``horovodrun -np N -H localhost:N --gloo`` for each N, in this process's
Python; each rank pins GPU ``local_rank`` when there are GPUs, so on a
multi-GPU host the same command measures GPU scaling against one GPU::

    python benchmarks/horovod_scaling.py --np 1 2 4 8 --batch 64

and over several hosts (one process per GPU; Horovod's launcher reaches the
other hosts by ssh)::

    python benchmarks/horovod_scaling.py --np 1 8 16 --hosts host1:8,host2:8

On a CPU-only machine the processes share the cores, so more processes
cannot be faster: the number shows what the all-reduce and the extra
processes cost. Results of ``python benchmarks/horovod_scaling.py`` on the
2-core development VM (no GPU) while other jobs kept its load average near 8::

    HorovodTrainer (Gloo), batch 32 per process, 100 steps after 10, best of 2; 2 cores; load average 8.0
    processes   steps/s   images/s  efficiency
            1     199.9       6396        1.00
            2     100.9       6460        0.50

Two processes on two shared cores process the same images/s as one: the
all-reduce costs nothing measurable here, and there is no speed-up to gain.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def worker(args: argparse.Namespace) -> None:
    """One rank: train ``warmup + steps`` steps; rank 0 writes the steps/s of the last ``steps``."""
    import logging

    from trainstack.distributed import HorovodTrainer

    trainer = HorovodTrainer()  # before TensorFlow starts: pins this rank's GPU
    from convnet_timing import time_training

    logging.getLogger("trainstack").setLevel(logging.WARNING)
    steps_per_s = args.steps / time_training(trainer, args.batch, args.warmup, args.steps)
    if trainer.is_chief:
        with open(args.worker_out, "w") as f:
            json.dump({"size": trainer.size, "steps_per_s": steps_per_s}, f)


def measure(n: int, args: argparse.Namespace) -> float:
    """Steps/s of ``n`` processes (``horovodrun -np n``)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "result.json")
        hosts = args.hosts or f"localhost:{n}"
        cmd = [sys.executable, "-c", "from horovod.runner.launch import run_commandline; run_commandline()",
               "-np", str(n), "-H", hosts, "--gloo", sys.executable, os.path.abspath(__file__), "--worker",
               "--worker-out", out, "--steps", str(args.steps), "--warmup", str(args.warmup),
               "--batch", str(args.batch)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            sys.exit(f"horovodrun -np {n} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
        with open(out) as f:
            result = json.load(f)
    assert result["size"] == n, result
    return result["steps_per_s"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--np", type=int, nargs="+", default=[1, 2], help="process counts (the first is the reference)")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--batch", type=int, default=32, help="images per process and step")
    parser.add_argument("--repeat", type=int, default=2, help="interleaved rounds; the best is kept")
    parser.add_argument("--hosts", default=None, help="horovodrun -H (default localhost:N)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--worker-out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args)
    best: dict[int, float] = {}
    for _ in range(args.repeat):  # interleaved: a busy machine slows every count alike
        for n in args.np:
            best[n] = max(best.get(n, 0.0), measure(n, args))
    ref = args.np[0]
    print(f"HorovodTrainer (Gloo), batch {args.batch} per process, {args.steps} steps after {args.warmup}, "
          f"best of {args.repeat}; {os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f}")
    print(f"{'processes':>9}{'steps/s':>10}{'images/s':>11}{'efficiency':>12}")
    for n in args.np:
        ips = best[n] * n * args.batch
        ref_ips = best[ref] * ref * args.batch
        print(f"{n:>9}{best[n]:>10.1f}{ips:>11.0f}{ips / (ref_ips * n / ref):>12.2f}")


if __name__ == "__main__":
    main()
