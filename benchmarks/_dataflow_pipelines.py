"""The work of benchmarks/dataflow_compare.py's pipelines, in a module of its own.

What worker processes run must be importable by them under every start method (tensorpack's
workers fork; trainstack's spawn), so the sources and map functions live here and not in the
benchmark script. Only NumPy is imported.
"""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np

IMAGE = (96, 96, 3)  # the "decoded" image of the augment pipeline
CROP = 80
LARGE_FLOATS = 1 << 20  # 4 MB of float32 per datapoint in the large pipeline


class Indices:
    """Datapoints ``[i]`` for i = 0, 1, 2, ... forever (tensorpack's and trainstack's DataFlow
    protocol: ``reset_state`` and ``__iter__``), so that every pipeline runs as long as it is read."""

    def reset_state(self) -> None:
        pass

    def __len__(self) -> int:
        raise NotImplementedError("endless")  # what both libraries' DataFlows raise for "no length"

    def __iter__(self) -> Iterator[list[int]]:
        i = 0
        while True:
            yield [i]
            i += 1


class LargeArrays(Indices):
    """Datapoints ``[array of LARGE_FLOATS float32]``: copying and transfer dominate."""

    def __iter__(self) -> Iterator[list[np.ndarray]]:
        for (i,) in super().__iter__():
            yield [np.full(LARGE_FLOATS, i, dtype=np.float32)]


class SmallPoints(Indices):
    """Datapoints ``[64 float32, index]`` made in a few microseconds: the per-datapoint cost of
    the transport (a message, a decode, a hand-over) is all there is to measure."""

    def __iter__(self) -> Iterator[list]:
        x = np.arange(64, dtype=np.float32)
        for (i,) in super().__iter__():
            yield [x * i, i]


def large_worker(index: int, count: int) -> LargeArrays:
    """A ``worker_factory`` for MultiProcessDataFlow: each worker runs its own ``LargeArrays``."""
    return LargeArrays()


def small_worker(index: int, count: int) -> SmallPoints:
    """A ``worker_factory`` for MultiProcessDataFlow: each worker runs its own ``SmallPoints``."""
    return SmallPoints()


def augment(dp: list[int]) -> list:
    """Decode and augment in NumPy, a few ms per datapoint: an image drawn from the index
    (the decode), a random crop, a flip, a 3x3 box blur, per-channel normalization."""
    i = int(dp[0])
    rng = np.random.default_rng(i)
    img = rng.integers(0, 256, IMAGE, dtype=np.uint8)
    y0, x0 = rng.integers(0, IMAGE[0] - CROP + 1, 2)
    crop = img[y0:y0 + CROP, x0:x0 + CROP].astype(np.float32)
    if rng.random() < 0.5:
        crop = crop[:, ::-1]
    padded = np.pad(crop, ((1, 1), (1, 1), (0, 0)), mode="edge")
    blurred = sum(padded[dy:dy + CROP, dx:dx + CROP] for dy in range(3) for dx in range(3)) / 9.0
    out = (blurred - blurred.mean(axis=(0, 1))) / (blurred.std(axis=(0, 1)) + 1e-5)
    return [np.ascontiguousarray(out, dtype=np.float32), np.int64(i % 10)]


def light(dp: list[int]) -> list:
    """About 50 microseconds of NumPy: serialization and transfer dominate."""
    i = int(dp[0])
    x = np.arange(256, dtype=np.float32) * i
    for _ in range(4):
        x = np.sqrt(np.abs(x) + 1.0)
    return [x, np.int64(i)]


LMDB_IMAGE = (32, 32, 3)  # the stored image of the LMDB pipeline (raw uint8 bytes, 3 KB)
LMDB_SIZE = 4096  # datapoints in the LMDB file


class RawImages:
    """``LMDB_SIZE`` datapoints ``[image bytes, label]``: what tensorpack's "Efficient DataFlow"
    tutorial serializes into one LMDB file (there, JPEG bytes; here raw pixels, so that the
    decode below costs the same in every library)."""

    def reset_state(self) -> None:
        pass

    def __len__(self) -> int:
        return LMDB_SIZE

    def __iter__(self) -> Iterator[list]:
        rng = np.random.default_rng(0)
        for i in range(LMDB_SIZE):
            yield [rng.integers(0, 256, LMDB_IMAGE, dtype=np.uint8).tobytes(), i % 10]


def decode(dp: list) -> list:
    """The tutorial's decode in a worker: bytes to an image, a flip, scaled to [0, 1]."""
    img = np.frombuffer(dp[0], dtype=np.uint8).reshape(LMDB_IMAGE)
    if dp[1] % 2:
        img = img[:, ::-1]
    return [img.astype(np.float32) / 255.0, np.int64(dp[1])]
