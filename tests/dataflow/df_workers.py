"""Dataflows and map functions that the multi-process tests send to worker processes.

They live in a plain module, not in a test file, because worker processes
unpickle them and import their module by name: the tests put this directory
on ``sys.path``, which the workers inherit. Nothing here imports TensorFlow.
"""
from __future__ import annotations

import os

import numpy as np

from trainstack.dataflow import DataFlow, RNGDataFlow


def ids(n: int) -> list[list[np.ndarray]]:
    """Datapoints ``[id]`` for ids ``0 .. n-1``."""
    return [[np.array(i, dtype=np.int64)] for i in range(n)]


def square_or_drop_multiples_of_5(dp: list) -> list | None:
    """A map_func: ``[id, id**2]``, dropping ids that are multiples of 5."""
    i = int(dp[0])
    if i % 5 == 0:
        return None
    return [np.array(i, dtype=np.int64), np.array(i * i, dtype=np.int64)]


def tag_with_pid(dp: list) -> list:
    """A map_func: append the id of the process that ran it."""
    return [*dp, np.array(os.getpid(), dtype=np.int64)]


def fail_on_7(dp: list) -> list:
    if int(dp[0]) == 7:
        raise ValueError("map_func refuses datapoint 7")
    return dp


class PidFlow(DataFlow):
    """``n`` datapoints ``[k, pid of the process that ran reset_state, pid iterating]``."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.reset_pid = None

    def reset_state(self) -> None:
        self.reset_pid = os.getpid()

    def __len__(self) -> int:
        return self.n

    def __iter__(self):
        for k in range(self.n):
            yield [np.array(k), np.array(self.reset_pid if self.reset_pid is not None else -1),
                   np.array(os.getpid())]


class EndlessRandom(RNGDataFlow):
    """No size; endless random ints from ``self.rng`` (so each worker draws its own)."""

    def __iter__(self):
        while True:
            yield [np.array(self.rng.randint(0, 2**31 - 1), dtype=np.int64)]


class EndlessRandomWithPid(RNGDataFlow):
    """No size; endless ``[random int from self.rng, pid of the process drawing it]``."""

    def __iter__(self):
        while True:
            yield [np.array(self.rng.randint(0, 2**31 - 1), dtype=np.int64), np.array(os.getpid())]
