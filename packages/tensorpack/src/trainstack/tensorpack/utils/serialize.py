"""tensorpack 0.11's ``tensorpack.utils.serialize``: ``dumps``/``loads`` with pickle, tensorpack's default.

tensorpack chose msgpack or pyarrow instead through ``$TENSORPACK_SERIALIZE``; here another value
than ``pickle`` is an error at the call, naming it.
"""
from __future__ import annotations

import os
import pickle
from typing import Any

from .._replaced import unprovided

__all__ = ["loads", "dumps"]


def _check_choice(call: str) -> None:
    choice = os.environ.get("TENSORPACK_SERIALIZE", "pickle")
    if choice != "pickle":
        raise ValueError(f"{call}: TENSORPACK_SERIALIZE={choice!r} is not supported by trainstack.tensorpack "
                         "(pickle only); unset it, or use trainstack.dataflow's msgpack codec "
                         "(trainstack.dataflow.codec)")


def dumps(obj: Any) -> bytes:
    """``pickle.dumps(obj, protocol=-1)``."""
    _check_choice("dumps()")
    return pickle.dumps(obj, protocol=-1)


def loads(buf: bytes) -> Any:
    """``pickle.loads(buf)``: the output of :func:`dumps`."""
    _check_choice("loads()")
    return pickle.loads(buf)  # noqa: S301 - tensorpack's format, for data the user serialized


__getattr__ = unprovided(__name__)
