"""Helpers of the differential suite: the two libraries side by side, and what a user observes.

``LIBS`` maps a name to a module with the DataFlow names (``tensorpack.dataflow``,
``trainstack.dataflow``); :func:`seeded` fixes the seed of both; :func:`observe`
turns datapoints into plain, comparable values that keep what a user can see
(list or tuple, dict keys, array dtype, shape and values, NumPy scalar types);
:func:`outcome` is the value of a call or the exception it raised;
:func:`close` stops what a dataflow of either library started (tensorpack's
processes and threads too, so that nothing outlives a test).

A module, not a test file: worker processes import it by name when a dataflow
refers to it.
"""
from __future__ import annotations

import contextlib
import itertools
import sys
from collections.abc import Callable, Iterator
from typing import Any

# The parity session installs no TensorFlow, and tensorpack.dataflow imports without it. In a
# development environment that has it, keep it out all the same: as in CI, and so that worker
# processes, which import this module for its map functions, start in a fraction of a second.
if "tensorflow" not in sys.modules:
    sys.modules["tensorflow"] = None  # type: ignore[assignment] - makes `import tensorflow` fail

import numpy as np  # noqa: E402
import tensorpack.dataflow as tp  # noqa: E402
import tensorpack.utils.utils as tp_utils  # noqa: E402

# map functions live in a module of their own, which imports neither library: worker processes
# import it by name, and start faster without tensorpack
from mapfuncs import double, drop_odd, identity  # noqa: E402,F401 - re-exported

import trainstack.dataflow as ts  # noqa: E402
from trainstack.dataflow.base import fix_rng_seed as ts_fix_rng_seed  # noqa: E402

LIBS = {"tensorpack": tp, "trainstack": ts}


@contextlib.contextmanager
def seeded(seed: int | None) -> Iterator[None]:
    """Both libraries' ``fix_rng_seed(seed)`` inside the block, no fixed seed after it."""
    tp_utils._RNG_SEED = None if seed is None else int(seed)
    ts_fix_rng_seed(seed)
    try:
        yield
    finally:
        tp_utils._RNG_SEED = None
        ts_fix_rng_seed(None)


def observe(value: Any) -> Any:
    """``value`` as plain nested tuples that compare with ``==``: a NumPy array becomes
    ``("ndarray", dtype, shape, values)``, a NumPy scalar ``("scalar", dtype, value)``, a list
    ``("list", ...)``, a tuple ``("tuple", ...)``, a dict ``("dict", (key, value) ...)`` in its
    order; a Python scalar ``(type name, value)``."""
    if isinstance(value, np.ndarray):
        return ("ndarray", value.dtype.str, value.shape, value.tolist())
    if isinstance(value, np.generic):
        return ("scalar", value.dtype.str, value.item())
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, *[observe(v) for v in value])
    if isinstance(value, dict):
        return ("dict", *[(observe(k), observe(v)) for k, v in value.items()])
    return (type(value).__name__, value)


def take(ds: Any, n: int) -> list[Any]:
    """The first ``n`` datapoints of one ``iter(ds)``, observed."""
    return [observe(dp) for dp in itertools.islice(iter(ds), n)]


def passes(ds: Any, count: int) -> list[list[Any]]:
    """``count`` full passes of ``ds``, each observed."""
    return [[observe(dp) for dp in ds] for _ in range(count)]


def outcome(fn: Callable[[], Any]) -> tuple[str, Any]:
    """``("ok", fn())`` or ``("raises", exception)``."""
    try:
        return "ok", fn()
    except Exception as e:  # noqa: BLE001 - what was raised is the observation
        return "raises", e


def close(ds: Any) -> None:
    """Stop what ``ds`` (of either library) started: trainstack's workers, tensorpack's processes,
    ZeroMQ context and threads."""
    if isinstance(ds, ts.MultiThreadMapData) or hasattr(ds, "close"):
        ds.close()
        return
    if isinstance(ds, tp.MultiThreadMapData):
        if ds._evt is not None:
            ds._evt.set()
        for t in ds._threads:
            t.stop()
        # a worker blocked on its empty input queue sees the event within a few seconds; it is a
        # daemon thread, not waited for
        ds._threads = []
        return
    context = getattr(ds, "context", None)
    if context is not None and not context.closed:
        ds.socket.close(0)
        context.destroy(0)
    for p in list(getattr(ds, "_procs", [])) + list(getattr(ds, "procs", [])):
        if p.pid is not None:
            p.terminate()
            p.join(10)
    if hasattr(ds, "_reset_done"):
        ds._reset_done = False  # tensorpack's __del__ then has nothing left to clean


@contextlib.contextmanager
def closing(ds: Any) -> Iterator[Any]:
    try:
        yield ds
    finally:
        close(ds)


def ids(n: int) -> list[list[Any]]:
    """Datapoints ``[k, k * 10]`` of Python ints, ``k`` in ``0 .. n-1``."""
    return [[k, k * 10] for k in range(n)]


def id_arrays(n: int) -> list[list[np.ndarray]]:
    """Datapoints ``[array(k), array([k, -k], float32)]``."""
    return [[np.array(k, dtype=np.int64), np.array([k, -k], dtype=np.float32)] for k in range(n)]


def mixed_types() -> list[list[Any]]:
    """Datapoints of every kind a worker process or a socket must carry: NumPy dtypes (bool and
    float16 too), 0-d and non-contiguous arrays, NumPy scalars, nested lists and dicts, bytes,
    str, None, bools, floats, ints beyond 64 bits, dicts with int keys."""
    grid = np.arange(24, dtype=np.float64).reshape(4, 6)
    return [
        [np.array([True, False]), np.arange(3, dtype=np.float16), np.arange(4, dtype=np.uint8),
         np.arange(2, dtype=np.int32), np.arange(2, dtype=np.complex64), np.array("text")],
        [np.array(7, dtype=np.int64), np.array(2.5, dtype=np.float32), np.float32(1.5), np.int16(-3), np.bool_(True)],
        [grid[::2, 1::2], grid.T, np.asfortranarray(grid)],
        [[1, [2, [3, {"deep": [b"x", None]}]]], {"a": {"b": [1.5, "s"]}, "n": None}],
        [b"\x00\x01\xff", "unicode \u00e9\u4e2d", None, True, False, 1e300, -0.0],
        [2**64 + 5, -(2**80), 2**63, -(2**63) - 1],
        [{1: "one", 2: [2]}, {0: {-1: np.arange(2)}}],
    ]


def msgpack_types() -> list[list[Any]]:
    """The part of :func:`mixed_types` that tensorpack's msgpack serializer carries (no ints
    beyond 64 bits, no 0-d or complex arrays: msgpack-numpy pickles those)."""
    return [dp for k, dp in enumerate(mixed_types()) if k in (2, 3, 4)]
