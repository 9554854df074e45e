"""The DataFlow base classes, tensorpack's protocol: ``__iter__``, ``__len__``, ``reset_state``.

- ``__iter__`` starts a pass and yields datapoints (lists or dicts of
  components); a finite dataflow can be iterated again as soon as a pass ends.
- ``__len__`` is the (possibly rough) number of datapoints in a pass; a
  DataFlow that does not know it raises ``NotImplementedError``, as in
  tensorpack; trainstack's raise :class:`SizeUnknownError`, which is also a
  ``TypeError`` (what ``len()`` of any object without a length raises), so
  that ``list(dataflow)`` works. :func:`~trainstack.dataflow.dataflow_len_or_none`
  handles all of these.
- ``reset_state`` is called once, in the process that iterates the dataflow,
  before the first pass: it seeds random number generators, starts worker
  processes, opens files. trainstack's inputs and multi-process dataflows call it.

Random numbers: :class:`RNGDataFlow` gets ``self.rng`` from :func:`get_rng` in
``reset_state``, seeded from the object, the process id and the time, so that
worker processes draw different numbers; :func:`fix_rng_seed` makes every
later ``get_rng`` return a generator with that seed, for reproducible runs.
"""
from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from typing import Any, Literal

import numpy as np

from trainstack.loop.checks import check_int

__all__ = ["DataFlow", "ProxyDataFlow", "RNGDataFlow", "DataFlowReentrantGuard", "DataFlowTerminated",
           "get_rng", "fix_rng_seed"]

_RNG_SEED: int | None = None


def fix_rng_seed(seed: int | None) -> None:
    """Make every later :func:`get_rng` (so every ``RNGDataFlow.reset_state``) seed with ``seed``;
    ``None`` goes back to seeds from the object, the process and the time.

    Call it before ``reset_state``. Worker processes of :class:`MultiProcessDataFlow` and
    friends inherit it (see their documentation for how each worker's seed is derived).
    """
    global _RNG_SEED
    seed = check_int("fix_rng_seed", "seed", seed, none_ok=True)
    _RNG_SEED = None if seed is None else seed % 2**32


def fixed_rng_seed() -> int | None:
    """The seed set by :func:`fix_rng_seed`, or None."""
    return _RNG_SEED


def get_rng(obj: Any = None) -> np.random.RandomState:
    """A ``np.random.RandomState`` seeded from ``obj``, the process id and the time, or with the
    seed of :func:`fix_rng_seed` when one is set."""
    if _RNG_SEED is not None:
        return np.random.RandomState(_RNG_SEED)
    seed = (id(obj) + os.getpid() + time.time_ns() // 1000) % 2**32
    return np.random.RandomState(seed)


class SizeUnknownError(NotImplementedError, TypeError):
    """``len()`` of a dataflow that does not know its size. A ``NotImplementedError`` as in
    tensorpack, and a ``TypeError`` as for any Python object without a length, so that
    ``list(dataflow)`` and other callers of ``len()`` as a hint still work."""


class DataFlowTerminated(BaseException):
    """A DataFlow can produce no more data (something failed underneath it)."""


class DataFlowReentrantGuard:
    """Raises if a non-reentrant dataflow is iterated while a pass of it is still running.

    It pickles as a new, free guard: a dataflow sent to a worker process runs no pass there yet
    (as a forked copy of tensorpack's guard starts free in the child, whose thread is new)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def __reduce__(self) -> tuple[type[DataFlowReentrantGuard], tuple[()]]:
        return (DataFlowReentrantGuard, ())

    def __enter__(self) -> None:
        if not self._lock.acquire(blocking=False):
            raise threading.ThreadError("this DataFlow is not reentrant: a pass of it is already running "
                                        "(use a second instance to iterate it in two places)")

    def __exit__(self, *exc: Any) -> Literal[False]:
        self._lock.release()
        return False


class DataFlow:
    """Base class of dataflows. Subclasses implement ``__iter__``, and ``__len__`` when they
    know their size; ``reset_state`` does nothing here.

    tensorpack's older ``get_data()`` / ``size()`` spellings work both ways: a subclass
    defining only ``get_data``/``size`` gets ``__iter__``/``__len__`` from them.
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        namespace = vars(cls)
        if "__iter__" not in namespace and "get_data" in namespace:
            cls.__iter__ = namespace["get_data"]  # type: ignore[method-assign]  # tensorpack's spelling
        if "__len__" not in namespace and "size" in namespace:
            cls.__len__ = namespace["size"]  # type: ignore[method-assign]  # tensorpack's spelling

    def __iter__(self) -> Iterator[Any]:
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")

    def __len__(self) -> int:
        raise SizeUnknownError(f"{type(self).__name__} does not know its size (no __len__)")

    def reset_state(self) -> None:
        """Prepare the dataflow in the process that iterates it (called once, before ``__iter__``)."""

    def get_data(self) -> Iterator[Any]:
        return self.__iter__()

    def size(self) -> int:
        return self.__len__()


class RNGDataFlow(DataFlow):
    """A DataFlow with ``self.rng``, a ``np.random.RandomState`` made in ``reset_state``."""

    rng: np.random.RandomState | None = None

    def reset_state(self) -> None:
        self.rng = get_rng(self)

    def _require_rng(self) -> np.random.RandomState:
        if self.rng is None:
            raise RuntimeError(f"{type(self).__name__} was iterated before reset_state(): call "
                               "reset_state() once in the process that iterates it (trainstack's "
                               "inputs and multi-process dataflows do)")
        return self.rng


class ProxyDataFlow(DataFlow):
    """A DataFlow over another one, ``self.ds``: every method goes to ``ds`` unless overridden."""

    def __init__(self, ds: Any) -> None:
        self.ds = ds

    def reset_state(self) -> None:
        reset = getattr(self.ds, "reset_state", None)
        if callable(reset):
            reset()

    def __len__(self) -> int:
        return len_of(self.ds)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.ds)


def len_of(ds: Any) -> int:
    """``len(ds)``, raising :class:`SizeUnknownError` (a ``NotImplementedError``, the DataFlow
    way) when ``ds`` has no size."""
    try:
        return len(ds)
    except SizeUnknownError:
        raise
    except (TypeError, NotImplementedError):
        raise SizeUnknownError(f"{type(ds).__name__} has no __len__") from None
