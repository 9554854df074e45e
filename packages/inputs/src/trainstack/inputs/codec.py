"""msgpack encoding of datapoints and of the frames that carry them between processes.

Worker processes (:mod:`.multiprocess`) and remote servers (:mod:`.remote`)
send datapoints as msgpack, never as pickle: decoding a frame from a peer can
build numbers, strings, bytes, lists, dicts and NumPy arrays, and nothing
else, so a hostile or broken peer cannot run code in the trainer. NumPy
arrays (and NumPy scalars) travel as msgpack extension types holding their
dtype, shape and raw bytes; object arrays, which would need pickle, are
refused.

A frame is a msgpack map with a ``kind``:

- ``{"kind": "hello", "size": n | None}``: first frame of a server, the size of its passes;
- ``{"kind": "data", "pass_num": p, "datapoint": dp}``: one datapoint of pass ``p`` (from 0);
- ``{"kind": "end_of_pass", "pass_num": p}``: the sender finished pass ``p``;
- ``{"kind": "error", "message": text}``: the sender failed (``text`` has its traceback).

This module imports no TensorFlow: worker processes load it on their own.
"""
from __future__ import annotations

import math
import reprlib
from typing import Any

import msgpack
import numpy as np

from .errors import FrameError

__all__ = ["dumps", "loads", "encode_frame", "decode_frame", "FRAME_FIELDS"]

_EXT_NDARRAY = 1
_EXT_NUMPY_SCALAR = 2
# bool, ints, floats, complex, bytes, str, timedelta, datetime: plain bytes with no references
_SENDABLE_KINDS = "biufcSUmM"

#: The fields each kind of frame must have, with their types.
FRAME_FIELDS: dict[str, dict[str, tuple[type, ...]]] = {
    "hello": {"size": (int, type(None))},
    "data": {"pass_num": (int,), "datapoint": (object,)},
    "end_of_pass": {"pass_num": (int,)},
    "error": {"message": (str,)},
}


def _check_sendable(dtype: np.dtype, what: str) -> None:
    if dtype.kind not in _SENDABLE_KINDS or dtype.hasobject:
        raise TypeError(
            f"cannot send {what} of dtype {dtype} through msgpack: only bool, int, uint, float, "
            "complex, bytes, str and datetime arrays are sent (object and structured arrays would "
            "need pickle); convert it to a numeric array")


def _encode_array(arr: np.ndarray) -> bytes:
    return msgpack.packb([arr.dtype.str, list(arr.shape), np.ascontiguousarray(arr).tobytes()],
                         use_bin_type=True)


def _default(obj: Any) -> Any:
    """msgpack's hook for what it does not encode itself (it runs with ``strict_types``, so that
    NumPy scalars subclassing float or str stay NumPy scalars): arrays, scalars, subclasses."""
    if isinstance(obj, np.ndarray):
        _check_sendable(obj.dtype, "an array")
        return msgpack.ExtType(_EXT_NDARRAY, _encode_array(obj))
    if isinstance(obj, np.generic):
        _check_sendable(obj.dtype, "a NumPy scalar")
        return msgpack.ExtType(_EXT_NUMPY_SCALAR, _encode_array(np.asarray(obj)))
    for base in (list, tuple, dict, str, bytes, int, float):  # tuples, named tuples, int enums, ...
        if isinstance(obj, base):
            return (list if base is tuple else base)(obj)
    raise TypeError(
        f"cannot send a {type(obj).__module__}.{type(obj).__qualname__} through msgpack: a datapoint "
        "may hold numbers, str, bytes, lists, tuples, dicts with str keys, NumPy arrays and scalars")


def dumps(obj: Any) -> bytes:
    """Encode ``obj`` (numbers, str, bytes, lists, tuples, str-keyed dicts, NumPy arrays) as msgpack.

    Tuples come back as lists. Raises ``TypeError`` naming what cannot be sent.
    """
    return msgpack.packb(obj, default=_default, use_bin_type=True, strict_types=True)


class _BadExt(ValueError):
    pass


def _decode_array(payload: bytes) -> np.ndarray:
    header = msgpack.unpackb(payload, raw=False)
    if (not isinstance(header, list) or len(header) != 3 or not isinstance(header[0], str)
            or not isinstance(header[1], list) or not isinstance(header[2], bytes)):
        raise _BadExt("an array must be [dtype, shape, bytes]")
    dtype_str, shape, raw = header
    try:
        dtype = np.dtype(dtype_str)
    except (TypeError, ValueError):
        raise _BadExt(f"unknown dtype {reprlib.repr(dtype_str)}") from None
    if dtype.kind not in _SENDABLE_KINDS or dtype.hasobject:
        raise _BadExt(f"refused dtype {reprlib.repr(dtype_str)}: only plain numeric, bytes, str and "
                      "datetime arrays are accepted")
    if not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
        raise _BadExt(f"bad shape {reprlib.repr(shape)}")
    expected = math.prod(shape) * dtype.itemsize
    if expected != len(raw):
        raise _BadExt(f"shape {tuple(shape)} of {dtype} needs {expected} bytes, the frame has {len(raw)}")
    # a copy, so that the receiver gets an ordinary writable array
    return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()


def _ext_hook(code: int, payload: bytes) -> Any:
    if code == _EXT_NDARRAY:
        return _decode_array(payload)
    if code == _EXT_NUMPY_SCALAR:
        arr = _decode_array(payload)
        if arr.shape != ():
            raise _BadExt(f"a NumPy scalar must have shape (), got {arr.shape}")
        return arr[()]
    raise _BadExt(f"unknown msgpack extension type {code}")


def loads(data: bytes, *, peer: str = "the peer") -> Any:
    """Decode msgpack ``data`` made by :func:`dumps`.

    Anything else (truncated, trailing bytes, an unknown extension, an array
    whose bytes disagree with its shape, pickle) raises :class:`FrameError` naming ``peer``.
    """
    try:
        return msgpack.unpackb(data, raw=False, ext_hook=_ext_hook)
    except Exception as e:  # noqa: BLE001 - msgpack raises many kinds; all mean "malformed"
        raise FrameError(f"malformed frame of {len(data)} bytes from {peer}: "
                         f"{type(e).__name__}: {e}") from None


def encode_frame(kind: str, **fields: Any) -> bytes:
    """A frame of ``kind`` with ``fields`` (see the module docstring), as msgpack bytes."""
    _check_frame(kind, fields, "the frame to send")
    return dumps({"kind": kind, **fields})


def decode_frame(data: bytes, *, peer: str = "the peer") -> dict[str, Any]:
    """Decode and check one frame from ``peer``; a malformed one raises :class:`FrameError`."""
    frame = loads(data, peer=peer)
    if not isinstance(frame, dict) or "kind" not in frame:
        raise FrameError(f"malformed frame from {peer}: expected a map with a 'kind', got "
                         f"{type(frame).__name__} {reprlib.repr(frame)}")
    _check_frame(frame["kind"], {k: v for k, v in frame.items() if k != "kind"}, f"frame from {peer}")
    return frame


def _check_frame(kind: Any, fields: dict[str, Any], what: str) -> None:
    expected = FRAME_FIELDS.get(kind) if isinstance(kind, str) else None
    if expected is None:
        raise FrameError(f"malformed {what}: unknown kind {reprlib.repr(kind)}, "
                         f"expected one of {sorted(FRAME_FIELDS)}")
    if set(fields) != set(expected):
        raise FrameError(f"malformed {what}: a {kind!r} frame has fields {sorted(expected)}, "
                         f"got {reprlib.repr(sorted(map(str, fields)))}")
    for name, types in expected.items():
        value = fields[name]
        if not isinstance(value, types) or (types == (int,) and (isinstance(value, bool) or value < 0)):
            raise FrameError(f"malformed {what}: field {name!r} of a {kind!r} frame is "
                             f"{reprlib.repr(value)}")
