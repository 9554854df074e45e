"""What the worker processes of test_dataflow_transport.py run (importable by name, as the
spawned workers import it)."""
from __future__ import annotations

import os
import time

import numpy as np

BIG = 1 << 15  # frame_io.OOB_MIN_BYTES: arrays at least this large go out of band


def arrays(i: int) -> dict:
    """Arrays of every kind the codec sends, large (out of band) and small (inline), from ``i``."""
    base = np.arange(400 * 600, dtype=np.float64).reshape(400, 600) + i
    return {
        "index": i,
        "non_contiguous": base[::3, ::2],  # 134 x 300 float64, a strided view
        "fortran": np.asfortranarray(base[:100, :100]),
        "zero_d": np.array(i * 1.5),
        "zero_d_big_str": np.array("x" * (BIG // 4 + 3) + str(i)),  # a 0-d array of 32 KB
        "bool": (np.arange(BIG * 2) % (i + 2)) == 0,
        "float16": np.linspace(0, i + 1, BIG, dtype=np.float16),
        "over_1mb": np.full((512, 700), i, dtype=np.float32),
        "int8": np.arange(BIG + 5, dtype=np.int64).astype(np.int8),
        "complex": np.arange(BIG // 8, dtype=np.complex128) * (1 + 1j * i),
        "datetime": np.arange(BIG // 8).astype("datetime64[ms]") + i,
        "strings": np.array([f"s{k}-{i}" for k in range(BIG // 16)]),
        "empty": np.zeros((0, 5), dtype=np.float32),
        "small": np.arange(3, dtype=np.uint16) + i,
        "scalar": np.float32(i),
        "list": [np.ones(BIG, dtype=np.uint8) * (i % 256), b"raw", "text", None, 2 ** 70],
    }


def arrays_of(dp: list) -> dict:
    return arrays(int(dp[0]))


class Arrays:
    """A dataflow of ``arrays(i)`` for i in range(n)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def reset_state(self) -> None:
        pass

    def __len__(self) -> int:
        return self.n

    def __iter__(self):
        for i in range(self.n):
            yield arrays(i)


_REUSED_BIG = np.zeros(BIG, dtype=np.float32)
_REUSED_SMALL = np.zeros(4, dtype=np.int64)


def reuse_outputs(dp: list):
    """Writes each result into the same two arrays (a map_func may reuse its buffers); drops
    multiples of 7."""
    i = int(dp[0])
    if i % 7 == 0:
        return None
    _REUSED_BIG[:] = i
    _REUSED_SMALL[:] = i
    return [i, _REUSED_BIG, _REUSED_SMALL]


def large_forever(dp=None):
    return [np.full(1 << 19, 3, dtype=np.float32)]


class LargeForever:
    def reset_state(self) -> None:
        pass

    def __iter__(self):
        while True:
            yield large_forever()


class ArraysWithPid(Arrays):
    """``Arrays``, each datapoint also naming the worker process that made it."""

    def __iter__(self):
        import os
        for dp in super().__iter__():
            yield {**dp, "pid": os.getpid()}


class SlowForever:
    """One small datapoint every ``delay`` seconds, forever."""

    def __init__(self, delay: float) -> None:
        self.delay = delay

    def reset_state(self) -> None:
        pass

    def __iter__(self):
        import time
        while True:
            time.sleep(self.delay)
            yield [np.zeros(1)]


class ReusedArray:
    """``n`` datapoints ``[array, i]`` written into the same array of ``size`` float32 (a dataflow
    may reuse its output buffers), filled with ``i``; one pass."""

    def __init__(self, n: int, size: int) -> None:
        self.n, self.size = n, size

    def reset_state(self) -> None:
        self.buffer = np.zeros(self.size, dtype=np.float32)

    def __len__(self) -> int:
        return self.n

    def __iter__(self):
        for i in range(self.n):
            self.buffer[:] = i
            yield [self.buffer, i]


class Paced:
    """Datapoints ``[first + i]`` for i in range(n), each made in ``delay`` seconds; with
    ``exit_code``, the process exits with it at the start of its second pass."""

    def __init__(self, n: int, delay: float, first: int = 0, exit_code: int | None = None) -> None:
        self.n, self.delay, self.first, self.exit_code = n, delay, first, exit_code
        self.passes = 0

    def __len__(self) -> int:
        return self.n

    def __iter__(self):
        if self.passes and self.exit_code is not None:
            os._exit(self.exit_code)
        self.passes += 1
        for i in range(self.n):
            time.sleep(self.delay)
            yield [self.first + i]


def fast_and_slow(index: int, count: int) -> Paced:
    """Worker 0 makes 50 datapoints at once, worker 1 five in 0.25 s."""
    return Paced(50, 0.0) if index == 0 else Paced(5, 0.05, first=100)


def dies_after_its_pass_beside_a_slow_one(index: int, count: int) -> Paced:
    """Worker 0 makes 3 datapoints, then exits with code 3; worker 1 takes an hour per datapoint."""
    return Paced(3, 0.0, exit_code=3) if index == 0 else Paced(2, 3600.0, first=100)
