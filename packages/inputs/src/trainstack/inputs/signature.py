"""Input signatures (lists of named ``tf.TensorSpec``) and checking datapoints against them."""
from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from .errors import InputSignatureError

__all__ = ["normalize_signature", "check_datapoint", "check_datapoint_at", "DatapointCheck", "check_tensors",
           "LossyConversionWarning"]


class LossyConversionWarning(UserWarning):
    """A datapoint's values changed when converted to their input's dtype (a float truncated to an
    int, a number other than 0 and 1 made a bool), as tensorpack's feed (TF1's
    ``np.asarray(value, dtype=placeholder.dtype)``) changed them."""


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

    Each value is converted to its spec's dtype as tensorpack's feed converted it (TF1's
    ``np.asarray(value, dtype=placeholder.dtype)``): float64 -> float32, int -> float32,
    float -> int32 (truncated toward zero: a :class:`LossyConversionWarning` when that changes a
    value), bool -> int, numbers -> bool. What TF1 turned into garbage or guessed is refused:
    values outside the dtype's range, NaN to an int, complex to real, strings to numbers. A
    refused value, a wrong shape, a missing or extra component raise
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
        arr = np.asarray(value)
        if not spec.shape.is_compatible_with(arr.shape):
            raise InputSignatureError(
                f"{source}: input '{spec.name}' expects {_spec_str(spec)}, got {_describe(arr)}")
        out.append(_converted(arr, spec, source))
    return out


def _converted(arr: np.ndarray, spec: tf.TensorSpec, source: str) -> np.ndarray:
    """``arr`` in ``spec``'s dtype, converted as TF1's feed did (``np.asarray(value, dtype)``), where
    that keeps the values: numbers to numbers and bools, bools to numbers. A float is truncated
    toward zero and a number other than 0/1 becomes ``True`` as in TF1, with a
    :class:`LossyConversionWarning`. Refused (TF1 gave garbage or guessed): values outside the
    dtype's range, NaN or infinity to an integer, complex to real, strings to numbers and back."""
    dtype = np.dtype(spec.dtype.as_numpy_dtype)
    src = arr.dtype
    if src == dtype:
        return arr

    def refuse(why: str) -> InputSignatureError:
        return InputSignatureError(f"{source}: input '{spec.name}' expects {_spec_str(spec)}, got {_describe(arr)}: "
                                   f"{why}")

    numeric = "biuf"
    if src.kind not in numeric or dtype.kind not in numeric:
        if src.kind == "c" and dtype.kind == "c":
            return arr.astype(dtype)
        if np.can_cast(src, dtype, casting="same_kind") and src.kind not in numeric and dtype.kind not in numeric:
            return arr.astype(dtype)
        raise refuse(f"dtype {src} does not convert to {spec.dtype.name}"
                     + (" (convert the values yourself, e.g. with float() or np.asarray(..., dtype))"
                        if src.kind in "USO" else ""))
    if dtype.kind in "iu" and src.kind in "iuf" and arr.size:
        info = np.iinfo(dtype)
        if src.kind == "f" and not np.isfinite(arr).all():
            raise refuse(f"NaN or infinity has no {spec.dtype.name} value")
        low, high = arr.min(), arr.max()
        if (np.trunc(low) if src.kind == "f" else low) < info.min or \
                (np.trunc(high) if src.kind == "f" else high) > info.max:
            raise refuse(f"values from {low} to {high} do not fit {spec.dtype.name} ({info.min} to {info.max})")
    out = arr.astype(dtype)
    lossy = (src.kind == "f" and dtype.kind in "iu" and not np.array_equal(out, arr)) or \
        (dtype.kind == "b" and src.kind != "b" and not np.isin(arr, (0, 1)).all())
    if lossy:
        what = "truncated toward zero" if dtype.kind in "iu" else "made True where not 0"
        warnings.warn(f"{source}: input '{spec.name}' ({spec.dtype.name}) got {src} values that change when "
                      f"converted: {what}, as tensorpack's feed did; convert them in the dataflow to choose "
                      "another rounding", LossyConversionWarning, stacklevel=2)
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
