"""Dataflows for the multi-process and remote input tests.

They live in a plain module, not in a test file, because worker processes
unpickle them and must import their module by name: the tests put this
directory on ``sys.path``, which spawned workers inherit. The module imports
no TensorFlow, so workers start fast.
"""
from __future__ import annotations

import os
import time

import numpy as np


def datapoint(i: int) -> list:
    """Datapoint ``i``: its id and a 2x2 image filled with it (to check that both arrive intact)."""
    return [np.array(i, dtype=np.int64), np.full((2, 2), i, dtype=np.float32)]


class IdFlow:
    """Datapoints ``start, start + step, ... < stop``, ``delay`` seconds apart."""

    def __init__(self, stop: int, start: int = 0, step: int = 1, delay: float = 0.0) -> None:
        self.ids = range(start, stop, step)
        self.delay = delay

    def __len__(self) -> int:
        return len(self.ids)

    def __iter__(self):
        for i in self.ids:
            if self.delay:
                time.sleep(self.delay)
            yield datapoint(i)


def slow_if_odd(dp: list) -> list:
    """A map_func taking 20 ms on odd ids: with 2 workers, worker 0 runs passes ahead of worker 1."""
    if int(dp[0]) % 2:
        time.sleep(0.02)
    return dp


class FailingFlow:
    """Yields datapoints 0, 1, ... and raises ValueError at datapoint ``fail_at``."""

    def __init__(self, n: int, fail_at: int) -> None:
        self.n, self.fail_at = n, fail_at

    def __len__(self) -> int:
        return self.n

    def __iter__(self):
        for i in range(self.n):
            if i == self.fail_at:
                raise ValueError(f"boom at datapoint {i}")
            yield datapoint(i)


def strided_flow(index: int, count: int) -> IdFlow:
    """A worker_factory: worker ``index`` of ``count`` makes ids 100 + index, 100 + index + count, ...
    up to 111."""
    return IdFlow(112, start=100 + index, step=count)


def tag_with_pid(dp: list) -> list:
    """A map_func: append the id of the process that ran it."""
    return [*dp, np.array(os.getpid(), dtype=np.int64)]


def object_array(dp: list) -> list:
    """A map_func whose result cannot be sent without pickle."""
    return [np.array([{"a": 1}], dtype=object)]
