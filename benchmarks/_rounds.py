"""Paired rounds: the timing shared by the benchmarks that compare whole training runs.

Each contender runs once per round, one block of epochs each, and records every epoch's wall
time. A contender's speed relative to another is the median over rounds of the ratio of their
blocks in the same round: the blocks of a round are neighbours in time, so a machine that slows
down for a while (this one drifts by 10-20% within minutes) slows both.
"""
from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Callable

from trainstack.loop import Callback

Blocks = dict[str, list[list[float]]]  # contender -> per round, its block's epoch times (warm-up dropped)


class EpochClock(Callback):
    """Records the wall time of every epoch of the training it is registered in."""

    def __init__(self) -> None:
        self.times: list[float] = []

    def _before_epoch(self) -> None:
        self._start = time.perf_counter()

    def _after_epoch(self) -> None:
        self.times.append(time.perf_counter() - self._start)


def add_round_arguments(parser: argparse.ArgumentParser, *, rounds: int, epochs: int = 4,
                        steps: int = 100) -> None:
    """The options of a benchmark timed by :func:`run_rounds`: ``--rounds``, ``--epochs`` per block
    (the first of a block is not counted) and ``--steps`` per epoch, with these defaults."""
    parser.add_argument("--rounds", type=int, default=rounds)
    parser.add_argument("--epochs", type=int, default=epochs, help="epochs per block (the first is not counted)")
    parser.add_argument("--steps", type=int, default=steps, help="steps per epoch")


def run_rounds(blocks: dict[str, Callable[[], list[float]]], rounds: int, label: str = "") -> Blocks:
    """Run every block once per round, in order; keep each block's epoch times but its first
    (which warms up)."""
    measured: Blocks = {name: [] for name in blocks}
    for r in range(rounds):
        for name, block in blocks.items():
            measured[name].append(block()[1:])
            # collect the block's garbage (a trainstack block leaves a whole trainer) now, untimed:
            # else a later block's collections pay for it, the more the more objects it makes
            gc.collect()
        print(f"  {label}{': ' if label else ''}round {r + 1}/{rounds} done", flush=True)
    return measured


def steps_per_s(times: list[list[float]], steps: int) -> float:
    """Median steps/s over the epochs of all blocks."""
    return steps / statistics.median(t for block in times for t in block)


def ratio(blocks: Blocks, a: str, b: str) -> float:
    """``a``'s speed over ``b``'s: the median over rounds of the ratio of their blocks in a round."""
    return statistics.median(statistics.median(tb) / statistics.median(ta)
                             for ta, tb in zip(blocks[a], blocks[b]))
