"""Worker start-up of MultiProcessDataFlow in a script that imports TensorFlow at its top.

Times, from ``reset_state()`` (which starts the workers) to the first
datapoint received, ``--workers`` worker processes (default 5) running a
dataflow that needs nothing but NumPy. The script imports TensorFlow first,
as training scripts do. With ``--main`` the dataflow is a class defined in
this script (``__main__``); with ``--lambda`` the workers also map every
datapoint with a lambda (a closure over a variable of the script). Both go to
the workers by value (cloudpickle), so no worker re-runs the script (before
that, ``--main`` made every worker re-run it, TensorFlow import included, and
a lambda was refused). Without either, the dataflow is a plain list of
datapoints.

    python benchmarks/worker_start.py [--workers 5] [--repeat 3] [--main] [--lambda]

Prints the time to the first datapoint and to the first datapoint of every
worker (the first full pass is complete only when every worker has started),
best and median of ``--repeat`` starts, with the machine's load average.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
import tensorflow as tf  # noqa: F401 - the point: a training script imports TensorFlow at its top

try:
    from trainstack.dataflow import MultiProcessDataFlow
except ImportError:  # trainstack before the dataflow layer existed
    from trainstack.inputs import MultiProcessDataFlow


class MainFlow:
    """A dataflow defined in the main script (sent to the workers by value)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __iter__(self):
        for i in range(self.n):
            yield [np.array(i, dtype=np.int64)]


def one_start(workers: int, in_main: bool, with_lambda: bool = False) -> tuple[float, float]:
    n = 10 * workers
    flow = MainFlow(n) if in_main else [[np.array(i, dtype=np.int64)] for i in range(n)]
    offset = 0  # the lambda's closure: the ids stay the same, so the worker of each can be told
    map_func = (lambda dp: [dp[0] + offset]) if with_lambda else None
    df = MultiProcessDataFlow(flow, workers, map_func=map_func)
    try:
        start = time.perf_counter()
        df.reset_state()
        first = all_workers = None
        seen = set()
        for dp in df:
            now = time.perf_counter() - start
            first = now if first is None else first
            seen.add(int(dp[0]) % workers)  # worker w sends the ids k with k % workers == w
            if len(seen) == workers:
                all_workers = now
                break
        return first, all_workers
    finally:
        df.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--main", action="store_true", help="define the dataflow in this script")
    parser.add_argument("--lambda", dest="with_lambda", action="store_true",
                        help="map each datapoint with a lambda of this script in the workers")
    args = parser.parse_args()
    times = [one_start(args.workers, args.main, args.with_lambda) for _ in range(args.repeat)]
    firsts, alls = [t[0] for t in times], [t[1] for t in times]
    where = "__main__ (the script)" if args.main else "a module (a list of NumPy datapoints)"
    if args.with_lambda:
        where += ", mapped by a lambda of the script"
    print(f"{args.workers} workers, dataflow defined in {where}, load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"first datapoint:          best {min(firsts):6.2f} s  median {statistics.median(firsts):6.2f} s")
    print(f"one from every worker:    best {min(alls):6.2f} s  median {statistics.median(alls):6.2f} s")


if __name__ == "__main__":
    main()
