"""Input signatures (lists of named ``tf.TensorSpec``) and checking datapoints against them."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from .errors import InputSignatureError

__all__ = ["normalize_signature", "check_datapoint", "check_datapoint_at", "DatapointCheck", "check_tensors"]


def normalize_signature(signature: Sequence[tf.TensorSpec]) -> tuple[tf.TensorSpec, ...]:
    """Validate ``signature``: a non-empty sequence of ``tf.TensorSpec`` with distinct names.

    Unnamed specs are named ``input<i>`` after their position.
    """
    if isinstance(signature, tf.TensorSpec) or not isinstance(signature, Sequence) or not signature:
        raise InputSignatureError(
            f"an input signature must be a non-empty list of tf.TensorSpec, got {signature!r}")
    specs = []
    for i, spec in enumerate(signature):
        if not isinstance(spec, tf.TensorSpec):
            raise InputSignatureError(f"input signature entry {i} must be a tf.TensorSpec, got {spec!r}")
        specs.append(spec if spec.name else tf.TensorSpec(spec.shape, spec.dtype, name=f"input{i}"))
    names = [s.name for s in specs]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise InputSignatureError(f"input signature has duplicate names {dup}: {names}")
    return tuple(specs)


def _describe(value: Any) -> str:
    shape = getattr(value, "shape", None)
    dtype = getattr(value, "dtype", None)
    if shape is not None and dtype is not None:
        return f"{type(value).__name__} of dtype {dtype} and shape {tuple(shape)}"
    return f"{type(value).__name__} {value!r:.80}"


def check_datapoint_at(pass_num: int, index: int, datapoint: Any, signature: Sequence[tf.TensorSpec],
                       source: str = "input") -> list[np.ndarray]:
    """:func:`check_datapoint` for datapoint ``index`` of pass ``pass_num`` (as
    :func:`~trainstack.dataflow.protocol.numbered_passes` yields them): its error names that
    position, so the bad datapoint can be found in the dataflow."""
    try:
        return check_datapoint(datapoint, signature, source)
    except InputSignatureError as e:
        raise InputSignatureError(f"{e} [datapoint {index} of pass {pass_num} of the dataflow, from 0]") from None


class DatapointCheck:
    """:func:`check_datapoint_at` for one signature, made for checking every datapoint of a stream.

    A datapoint that already is what the signature asks for (a list or tuple of NumPy arrays of
    exactly the specs' dtypes, with compatible shapes) is returned as a list after a few
    comparisons; any other goes through :func:`check_datapoint_at`, which converts it or raises,
    so both paths give the same arrays and the same errors. The full check cost a FeedInput
    ~6 microseconds per batch of two arrays (much of it ``TensorShape`` arithmetic), this one ~2.
    """

    def __init__(self, signature: Sequence[tf.TensorSpec], source: str = "input") -> None:
        self.signature = tuple(signature)
        self.source = source
        self._expected = [(np.dtype(spec.dtype.as_numpy_dtype),
                           None if spec.shape.rank is None else tuple(spec.shape.as_list()))
                          for spec in self.signature]

    def __call__(self, pass_num: int, index: int, datapoint: Any) -> list[np.ndarray]:
        """The checked arrays of datapoint ``index`` of pass ``pass_num``, in signature order."""
        if type(datapoint) in (list, tuple) and len(datapoint) == len(self._expected):
            for value, (dtype, shape) in zip(datapoint, self._expected):
                if type(value) is not np.ndarray or value.dtype is not dtype or not _fits(value.shape, shape):
                    break
            else:
                return list(datapoint)
        return check_datapoint_at(pass_num, index, datapoint, self.signature, self.source)


def _fits(shape: tuple[int, ...], expected: tuple[int | None, ...] | None) -> bool:
    if expected is None:
        return True
    if len(shape) != len(expected):
        return False
    for size, want in zip(shape, expected):
        if want is not None and size != want:
            return False
    return True


def check_datapoint(datapoint: Any, signature: Sequence[tf.TensorSpec],
                    source: str = "input") -> list[np.ndarray]:
    """Return ``datapoint`` (a list, tuple or dict of arrays) as a list of arrays in signature order.

    Each value is converted to its spec's dtype when NumPy calls that a
    ``same_kind`` cast (float64 -> float32, int64 -> int32); anything else
    (float -> int, a wrong shape, a missing or extra component) raises
    :class:`InputSignatureError` naming ``source``, the input, its spec and what arrived.
    """
    if isinstance(datapoint, Mapping):
        missing = [s.name for s in signature if s.name not in datapoint]
        extra = sorted(set(map(str, datapoint)) - {s.name for s in signature})
        if missing or extra:
            raise InputSignatureError(
                f"{source}: datapoint has keys {sorted(map(str, datapoint))}, the input signature "
                f"expects {[s.name for s in signature]} (missing {missing}, unexpected {extra})")
        values = [datapoint[s.name] for s in signature]
    elif isinstance(datapoint, (list, tuple)):
        if len(datapoint) != len(signature):
            raise InputSignatureError(
                f"{source}: datapoint has {len(datapoint)} components, the input signature expects "
                f"{len(signature)}: {[s.name for s in signature]}")
        values = list(datapoint)
    else:
        raise InputSignatureError(
            f"{source}: a datapoint must be a list, tuple or dict of arrays matching "
            f"{[s.name for s in signature]}, got {_describe(datapoint)}")
    out = []
    for spec, value in zip(signature, values):
        dtype = spec.dtype.as_numpy_dtype
        arr = np.asarray(value)
        if arr.dtype != dtype and not np.can_cast(arr.dtype, dtype, casting="same_kind"):
            raise InputSignatureError(
                f"{source}: input '{spec.name}' expects {_spec_str(spec)}, got {_describe(arr)} "
                f"(dtype {arr.dtype} does not convert to {spec.dtype.name})")
        if not spec.shape.is_compatible_with(arr.shape):
            raise InputSignatureError(
                f"{source}: input '{spec.name}' expects {_spec_str(spec)}, got {_describe(arr)}")
        out.append(arr if arr.dtype == dtype else arr.astype(dtype))
    return out


def check_tensors(tensors: Sequence[Any], signature: Sequence[tf.TensorSpec],
                  source: str = "input") -> list[tf.Tensor]:
    """Check tensors (static dtype and shape) against ``signature``; return them as a list."""
    tensors = list(tensors)
    if len(tensors) != len(signature):
        raise InputSignatureError(f"{source} produced {len(tensors)} tensors, the input signature "
                                  f"expects {len(signature)}: {[s.name for s in signature]}")
    for spec, t in zip(signature, tensors):
        if t.dtype != spec.dtype or not spec.shape.is_compatible_with(t.shape):
            raise InputSignatureError(
                f"{source}: input '{spec.name}' expects {_spec_str(spec)}, got a tensor of dtype "
                f"{t.dtype.name} and shape {t.shape}")
    return tensors


def _spec_str(spec: tf.TensorSpec) -> str:
    return f"dtype {spec.dtype.name} and shape {spec.shape}"
