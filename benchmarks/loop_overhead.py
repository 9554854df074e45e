"""Per-step overhead of the trainstack loop, against a bare ``for`` loop.

Both run the same plain-Python step the same number of times; the trainer has
ten callbacks that override no per-step hook (each has an epoch-level hook),
as well as the default machinery (loop state, hooked run, callback group).

    python benchmarks/loop_overhead.py [--steps 200000] [--repeat 5]

Prints, for a trivial step and for a busy step (a 400-iteration Python loop), the best-of-N
time per step of each and their ratio (trainstack / bare loop).
"""
from __future__ import annotations

import argparse
import logging
import time

from trainstack.loop import Callback, Trainer


class EpochOnly(Callback):
    """A callback with work only at epoch ends: free on every per-step hook."""

    def _trigger_epoch(self):
        pass


def trivial_step():
    return None


def busy_step(n=400):
    total = 0
    for i in range(n):
        total += i * i
    return total


def bare(step, steps_per_epoch, epochs):
    start = time.perf_counter()
    for _epoch in range(epochs):
        for _ in range(steps_per_epoch):
            step()
    return time.perf_counter() - start


def trainstack(step, steps_per_epoch, epochs):
    trainer = Trainer()
    trainer.train_op = step
    start = time.perf_counter()
    trainer.train([EpochOnly() for _ in range(10)], [], steps_per_epoch=steps_per_epoch,
                  max_epoch=epochs)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200_000, help="steps per measurement")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=5, help="best of N")
    args = parser.parse_args()
    logging.getLogger("trainstack").setLevel(logging.WARNING)
    spe = args.steps // args.epochs
    n = spe * args.epochs
    print(f"{n} steps ({args.epochs} epochs x {spe}), best of {args.repeat}; 10 callbacks")
    print(f"{'step':<10}{'bare us/step':>14}{'trainstack us/step':>20}{'overhead us':>13}{'ratio':>8}")
    for name, step, scale in (("trivial", trivial_step, 1), ("busy", busy_step, 20)):
        steps = max(spe // scale, 1)
        total = steps * args.epochs
        # interleaved, so that a busy machine slows both alike
        runs = [(bare(step, steps, args.epochs), trainstack(step, steps, args.epochs))
                for _ in range(args.repeat)]
        t_bare = min(r[0] for r in runs) / total * 1e6
        t_ts = min(r[1] for r in runs) / total * 1e6
        print(f"{name:<10}{t_bare:>14.3f}{t_ts:>20.3f}{t_ts - t_bare:>13.3f}{t_ts / t_bare:>8.2f}")


if __name__ == "__main__":
    main()
