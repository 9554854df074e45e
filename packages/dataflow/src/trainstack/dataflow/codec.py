"""msgpack encoding of datapoints and of the frames that carry them between processes.

Worker processes (:mod:`.parallel`, :mod:`.parallel_map`) and remote servers
(``trainstack.inputs.remote``) send datapoints as msgpack, never as pickle: decoding a frame from a peer can
build numbers, strings, bytes, lists, dicts and NumPy arrays, and nothing
else, so a hostile or broken peer cannot run code in the trainer. NumPy
arrays (and NumPy scalars) travel as msgpack extension types holding their
dtype, shape and raw bytes; object arrays, which would need pickle, are
refused. Integers beyond msgpack's 64 bits travel as another extension type
(their two's-complement bytes). Dict keys may be str or bytes, and, between
trainstack's own processes (``trusted=True``), also ints, floats, bools and
None; a remote peer may send only str and bytes keys (Python's int hashes are
easy to make collide). What cannot be sent raises :class:`UnsendableError`
naming its path inside the datapoint (``datapoint[1]['boxes']``).

A frame is a msgpack map with a ``kind``:

- ``{"kind": "hello", "size": n | None}``: first frame of a server, the size of its passes;
- ``{"kind": "data", "pass_num": p, "datapoint": dp}``: one datapoint of pass ``p`` (from 0);
- ``{"kind": "end_of_pass", "pass_num": p}``: the sender finished pass ``p``;
- ``{"kind": "error", "message": text}``: the sender failed (``text`` has its traceback);
- ``{"kind": "task", "datapoint": dp}``: a datapoint for a map worker to map;
- ``{"kind": "result", "datapoint": dp}``: a map worker's result of one task (None: dropped).

This module imports no TensorFlow (nothing in ``trainstack.dataflow`` does).
"""
from __future__ import annotations

import math
import reprlib
from typing import Any

import msgpack
import numpy as np

from .errors import FrameError, UnsendableError

# msgpack's own Packer and unpackb, bound here rather than looked up as msgpack.packb and
# msgpack.unpackb at each call: msgpack_numpy.patch(), which tensorpack runs when it is
# imported, replaces those module attributes with versions that encode arrays their own way
# (a worker would get a dict instead of an array) and unpickle object arrays from a peer.
if msgpack.Packer.__module__.startswith("msgpack."):
    _Packer, _unpackb = msgpack.Packer, msgpack.unpackb
else:  # already patched when this module is imported
    try:
        from msgpack._cmsgpack import Packer as _Packer, unpackb as _unpackb
    except ImportError:
        from msgpack.fallback import Packer as _Packer, unpackb as _unpackb  # type: ignore[assignment]


def packb(obj: Any, **kwargs: Any) -> bytes:
    """``msgpack.packb`` as msgpack defines it, whatever patched the ``msgpack`` module."""
    return _Packer(**kwargs).pack(obj)


def unpackb(data: Any, **kwargs: Any) -> Any:
    """``msgpack.unpackb`` as msgpack defines it, whatever patched the ``msgpack`` module."""
    return _unpackb(data, **kwargs)

__all__ = ["dumps", "loads", "encode_frame", "decode_frame", "FRAME_FIELDS"]

_EXT_NDARRAY = 1
_EXT_NUMPY_SCALAR = 2
_EXT_BIG_INT = 3
_INT_RANGE = range(-(2**63), 2**64)  # what msgpack encodes as a plain int
# bool, ints, floats, complex, bytes, str, timedelta, datetime: plain bytes with no references
_SENDABLE_KINDS = "biufcSUmM"

#: The fields each kind of frame must have, with their types.
FRAME_FIELDS: dict[str, dict[str, tuple[type, ...]]] = {
    "hello": {"size": (int, type(None))},
    "data": {"pass_num": (int,), "datapoint": (object,)},
    "end_of_pass": {"pass_num": (int,)},
    "error": {"message": (str,)},
    "task": {"datapoint": (object,)},
    "result": {"datapoint": (object,)},
}


def _check_sendable(dtype: np.dtype, what: str) -> None:
    if dtype.kind not in _SENDABLE_KINDS or dtype.hasobject:
        raise TypeError(
            f"cannot send {what} of dtype {dtype} through msgpack: only bool, int, uint, float, "
            "complex, bytes, str and datetime arrays are sent (object and structured arrays would "
            "need pickle); convert it to a numeric array")


def _encode_array(arr: np.ndarray) -> bytes:
    return packb([arr.dtype.str, list(arr.shape), np.ascontiguousarray(arr).tobytes()],
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
    if isinstance(obj, int) and not isinstance(obj, bool) and int(obj) not in _INT_RANGE:
        value = int(obj)
        return msgpack.ExtType(_EXT_BIG_INT, value.to_bytes(value.bit_length() // 8 + 1, "little", signed=True))
    for base in (list, tuple, dict, str, bytes, int, float):  # tuples, named tuples, int enums, ...
        if isinstance(obj, base):
            return (list if base is tuple else base)(obj)
    raise TypeError(
        f"cannot send a {type(obj).__module__}.{type(obj).__qualname__} through msgpack: a datapoint "
        "may hold numbers, str, bytes, None, lists, tuples, dicts, NumPy arrays and scalars")


def dumps(obj: Any) -> bytes:
    """Encode ``obj`` (numbers, str, bytes, None, lists, tuples, dicts, NumPy arrays) as msgpack.

    Tuples come back as lists. What cannot be sent raises :class:`UnsendableError` (a
    ``TypeError``) naming its path inside ``obj`` and why.
    """
    try:
        return _pack(obj)
    except (TypeError, ValueError, OverflowError) as e:
        path, reason = _find_unsendable(obj, "datapoint") or ("datapoint", str(e))
        raise UnsendableError(f"cannot send {path}: {reason}") from None


def _pack(obj: Any) -> bytes:
    return packb(obj, default=_default, use_bin_type=True, strict_types=True)


def _find_unsendable(obj: Any, path: str) -> tuple[str, str] | None:
    """The path of the first part of ``obj`` that :func:`dumps` refuses, and why; None when
    there is none. Only called once encoding failed, so that sending pays nothing for it."""
    if isinstance(obj, (list, tuple)):
        for k, item in enumerate(obj):
            found = _find_unsendable(item, f"{path}[{k}]")
            if found is not None:
                return found
        return None
    if isinstance(obj, dict):
        for key, item in obj.items():
            found = _find_unsendable(key, f"a key of {path}") or _find_unsendable(item, f"{path}[{key!r}]")
            if found is not None:
                return found
        return None
    try:
        _pack(obj)
    except (TypeError, ValueError, OverflowError) as e:
        return path, str(e)
    return None


class _BadExt(ValueError):
    pass


# The longest dtype string accepted: those of dumps are a few characters ('<f4', '<M8[ms]', '<U10');
# a longer one is not worth parsing.
_MAX_DTYPE_CHARS = 32
# NumPy 2's most dimensions an array may have (NumPy 1's is 32, whose reshape then refuses more)
_MAX_DIMS = 64


def _decode_array(payload: bytes) -> np.ndarray:
    # unpackb bounds every length a header claims by len(payload), so this allocates at most in
    # proportion to the payload, whatever the peer claims
    try:
        header = unpackb(payload, raw=False)
    except Exception as e:  # noqa: BLE001 - msgpack raises many kinds; all mean "malformed"
        raise _BadExt(f"an array's header is not msgpack ({_describe(e)})") from None
    if (not isinstance(header, list) or len(header) != 3 or not isinstance(header[0], str)
            or not isinstance(header[1], list) or not isinstance(header[2], bytes)):
        raise _BadExt(f"an array must be [dtype str, shape list, bytes], got {reprlib.repr(header)}")
    dtype_str, shape, raw = header
    if len(dtype_str) > _MAX_DTYPE_CHARS:
        raise _BadExt(f"dtype {reprlib.repr(dtype_str)} is longer than {_MAX_DTYPE_CHARS} characters")
    try:
        dtype = np.dtype(dtype_str)
    except Exception:  # noqa: BLE001 - NumPy raises TypeError, ValueError, SyntaxError, ...
        raise _BadExt(f"unknown dtype {reprlib.repr(dtype_str)}") from None
    if dtype.kind not in _SENDABLE_KINDS or dtype.hasobject or dtype.itemsize == 0:
        raise _BadExt(f"refused dtype {reprlib.repr(dtype_str)}: only plain numeric, bytes, str and "
                      "datetime arrays with items of at least one byte are accepted")
    if len(shape) > _MAX_DIMS:
        raise _BadExt(f"an array of {len(shape)} dimensions, more than {_MAX_DIMS}")
    if not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
        raise _BadExt(f"bad shape {reprlib.repr(shape)}: expected non-negative ints")
    expected = math.prod(shape) * dtype.itemsize  # a Python int: claims do not overflow it
    if expected != len(raw):
        raise _BadExt(f"shape {tuple(shape)} of {dtype} needs {expected} bytes, the frame has {len(raw)}")
    try:
        arr = np.frombuffer(raw, dtype=dtype).reshape(shape)
    except ValueError as e:  # e.g. an empty array whose other dimensions overflow NumPy's sizes
        raise _BadExt(f"shape {reprlib.repr(tuple(shape))} of {dtype} is not a NumPy array's: {e}") from None
    # a copy (of len(raw) bytes), so that the receiver gets an ordinary writable array
    return arr.copy()


def _ext_hook(code: int, payload: bytes) -> Any:
    if code == _EXT_BIG_INT:
        return int.from_bytes(payload, "little", signed=True)
    if code == _EXT_NDARRAY:
        return _decode_array(payload)
    if code == _EXT_NUMPY_SCALAR:
        arr = _decode_array(payload)
        if arr.shape != ():
            raise _BadExt(f"a NumPy scalar must have shape (), got {arr.shape}")
        return arr[()]
    raise _BadExt(f"unknown msgpack extension type {code}, expected {_EXT_NDARRAY} (array), "
                  f"{_EXT_NUMPY_SCALAR} (NumPy scalar) or {_EXT_BIG_INT} (int beyond 64 bits)")


def _describe(e: Exception) -> str:
    """What a decoding error of msgpack or of :func:`_ext_hook` says was wrong."""
    if isinstance(e, _BadExt):
        return str(e)
    if isinstance(e, msgpack.ExtraData):
        return "trailing bytes after the msgpack object"
    if isinstance(e, TypeError) and "unhashable" in str(e):
        return (f"a dict key that is a list or tuple ({e}; tuples are sent as lists): dict keys "
                "must be str, bytes, numbers, bools or None")
    if isinstance(e, ValueError) and "not allowed for map key" in str(e):
        return (f"{e}: only str and bytes dict keys are accepted from this peer (ints, floats, bools "
                "and None only between trainstack's own processes)")
    if isinstance(e, msgpack.exceptions.StackError):
        return "containers nested deeper than msgpack's limit"
    return f"{type(e).__name__}: {e}"


def _has_timestamp(obj: Any) -> bool:
    """Whether ``obj`` holds a ``msgpack.Timestamp`` (msgpack's extension -1, which unpackb always
    decodes itself). Walks lists and dicts only, at C speed over their items."""
    stack = [obj]
    while stack:
        o = stack.pop()
        items = o if type(o) is list else o.values() if type(o) is dict else (o,)
        types = set(map(type, items))
        if msgpack.Timestamp in types:
            return True
        if list in types or dict in types:
            stack.extend(x for x in items if type(x) in (list, dict))
    return False


def loads(data: bytes, *, peer: str = "the peer", trusted: bool = False) -> Any:
    """Decode msgpack ``data`` made by :func:`dumps`.

    Anything else (truncated, trailing bytes, an unknown extension, an array
    whose bytes disagree with its shape, pickle) raises :class:`FrameError`
    naming ``peer`` and what was wrong. Nothing the peer claims (a length, a
    shape) is allocated before it is checked against the bytes of ``data``.
    ``trusted`` (a worker process of this trainer, or its trainer) also accepts dict keys
    that are not str or bytes.
    """
    try:
        # unpackb's default limits (max_bin_len, max_array_len, ...) are len(data): a header
        # claiming more items or bytes than the frame holds is refused before any allocation
        obj = unpackb(data, raw=False, ext_hook=_ext_hook, strict_map_key=not trusted)
    except Exception as e:  # noqa: BLE001 - msgpack raises many kinds; all mean "malformed"
        raise FrameError(f"malformed frame of {len(data)} bytes from {peer}: {_describe(e)}; "
                         "expected one msgpack object as codec.dumps writes it") from None
    # the timestamp's type byte is 0xff: frames without one (most) skip the walk
    if b"\xff" in data and _has_timestamp(obj):
        raise FrameError(f"malformed frame of {len(data)} bytes from {peer}: a msgpack timestamp "
                         "(extension -1), expected only numbers, str, bytes, lists, dicts and arrays")
    return obj


def encode_frame(kind: str, **fields: Any) -> bytes:
    """A frame of ``kind`` with ``fields`` (see the module docstring), as msgpack bytes."""
    _check_frame(kind, fields, "the frame to send")
    try:
        return _pack({"kind": kind, **fields})
    except (TypeError, ValueError, OverflowError) as e:
        for name, value in fields.items():
            found = _find_unsendable(value, name)
            if found is not None:
                raise UnsendableError(f"cannot send {found[0]}: {found[1]}") from None
        raise UnsendableError(f"cannot send a {kind!r} frame: {e}") from None


def decode_frame(data: bytes, *, peer: str = "the peer", trusted: bool = False) -> dict[str, Any]:
    """Decode and check one frame from ``peer``; a malformed one raises :class:`FrameError`.
    ``trusted``: as for :func:`loads`."""
    frame = loads(data, peer=peer, trusted=trusted)
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
