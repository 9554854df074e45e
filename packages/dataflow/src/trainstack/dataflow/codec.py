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
- ``{"kind": "data", "pass_num": p, "datapoint": dp}``: one datapoint of pass ``p`` (from 0; a
  remote server's);
- ``{"kind": "chunk", "pass_num": p, "datapoints": [dp, ...]}``: several datapoints of pass
  ``p``, in order (what a worker process sends: several small datapoints cost one message);
- ``{"kind": "end_of_pass", "pass_num": p}``: the sender finished pass ``p``;
- ``{"kind": "error", "message": text}``: the sender failed (``text`` has its traceback);
- ``{"kind": "task", "datapoint": dp}``: a datapoint for a map worker to map;
- ``{"kind": "result", "datapoint": dp}``: a map worker's result of one task (None: dropped);
- ``{"kind": "tasks", "datapoints": [dp, ...]}``: several datapoints for a map worker, in order;
- ``{"kind": "results", "count": n, "datapoints": [dp, ...]}``: a map worker's results of the
  ``n`` datapoints of one ``tasks`` frame, in their order, those mapped to None left out.

Between trainstack's own processes only, :func:`encode_frame_oob` sends large arrays
*out of band*: the frame holds their dtype and shape (extension type 4) and their raw bytes
follow the frame on the same connection, written straight from the array
(:func:`.frame_io.send_frame`) and read straight into the new array
(:func:`.frame_io.recv_frame`), with no copy in user space. Only a decoder given an ``oob`` list accepts them (never a remote peer).

This module imports no TensorFlow (nothing in ``trainstack.dataflow`` does).
"""
from __future__ import annotations

import math
import reprlib
import threading
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
        from msgpack._cmsgpack import Packer as _Packer  # type: ignore[no-redef]  # msgpack: untyped
        from msgpack._cmsgpack import unpackb as _unpackb  # type: ignore[no-redef]
    except ImportError:
        from msgpack.fallback import Packer as _Packer  # type: ignore[no-redef]
        from msgpack.fallback import unpackb as _unpackb  # type: ignore[no-redef]


def packb(obj: Any, **kwargs: Any) -> bytes:
    """``msgpack.packb`` as msgpack defines it, whatever patched the ``msgpack`` module."""
    return _Packer(**kwargs).pack(obj)  # type: ignore[no-any-return]  # msgpack: untyped


_plain_packers = threading.local()  # each thread's Packer for _pack_plain


def _pack_plain(obj: Any) -> bytes:
    """``packb(obj, use_bin_type=True)`` through one Packer per thread, reused. What it packs is
    an array's header, inside the ``default`` of the Packer packing the datapoint: a new Packer
    there allocates a second 1 MiB buffer (msgpack's initial size) while the first is in use,
    which made packing a datapoint with a 77 KB out-of-band array cost 26 microseconds, not 6."""
    return _plain_packer().pack(obj)  # type: ignore[no-any-return]  # msgpack: untyped


def _plain_packer() -> Any:
    """This thread's Packer with msgpack's defaults and ``use_bin_type``, made once."""
    packer = getattr(_plain_packers, "packer", None)
    if packer is None:
        packer = _plain_packers.packer = _Packer(use_bin_type=True)
    return packer


def unpackb(data: Any, **kwargs: Any) -> Any:
    """``msgpack.unpackb`` as msgpack defines it, whatever patched the ``msgpack`` module."""
    return _unpackb(data, **kwargs)

__all__ = ["dumps", "loads", "encode_frame", "decode_frame", "FRAME_FIELDS"]

_EXT_NDARRAY = 1
_EXT_NUMPY_SCALAR = 2
_EXT_BIG_INT = 3
_EXT_OOB_NDARRAY = 4
_INT_RANGE = range(-(2**63), 2**64)  # what msgpack encodes as a plain int
# bool, ints, floats, complex, bytes, str, timedelta, datetime: plain bytes with no references
_SENDABLE_KINDS = "biufcSUmM"

#: The fields each kind of frame must have, with their types.
FRAME_FIELDS: dict[str, dict[str, tuple[type, ...]]] = {
    "hello": {"size": (int, type(None))},
    "data": {"pass_num": (int,), "datapoint": (object,)},
    "chunk": {"pass_num": (int,), "datapoints": (list,)},
    "end_of_pass": {"pass_num": (int,)},
    "error": {"message": (str,)},
    "task": {"datapoint": (object,)},
    "result": {"datapoint": (object,)},
    "tasks": {"datapoints": (list,)},
    "results": {"count": (int,), "datapoints": (list,)},
}


def _check_sendable(dtype: np.dtype, what: str) -> None:
    if dtype.kind not in _SENDABLE_KINDS or dtype.hasobject:
        raise TypeError(
            f"cannot send {what} of dtype {dtype} through msgpack: only bool, int, uint, float, "
            "complex, bytes, str and datetime arrays are sent (object and structured arrays would "
            "need pickle); convert it to a numeric array")


def _encode_array(arr: np.ndarray) -> bytes:
    return _pack_plain([arr.dtype.str, list(arr.shape), np.ascontiguousarray(arr).tobytes()])


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
            return (list if base is tuple else base)(obj)  # type: ignore[arg-type]  # obj is a base
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
    dtype = _check_header_dtype_shape(dtype_str, shape)
    expected = math.prod(shape) * dtype.itemsize  # a Python int: claims do not overflow it
    if expected != len(raw):
        raise _BadExt(f"shape {tuple(shape)} of {dtype} needs {expected} bytes, the frame has {len(raw)}")
    try:
        arr = np.frombuffer(raw, dtype=dtype).reshape(shape)
    except ValueError as e:  # e.g. an empty array whose other dimensions overflow NumPy's sizes
        raise _BadExt(f"shape {reprlib.repr(tuple(shape))} of {dtype} is not a NumPy array's: {e}") from None
    # a copy (of len(raw) bytes), so that the receiver gets an ordinary writable array
    return arr.copy()


# dtype strings already checked (a few in practice; bounded, whatever a peer sends)
_CHECKED_DTYPES: dict[str, np.dtype] = {}


def _check_header_dtype_shape(dtype_str: str, shape: list[Any]) -> np.dtype:
    """The dtype of an array's header, and its shape, checked; a bad one raises :class:`_BadExt`."""
    dtype = _CHECKED_DTYPES.get(dtype_str)
    if dtype is None:
        dtype = _check_dtype(dtype_str)
        if len(_CHECKED_DTYPES) < 256:
            _CHECKED_DTYPES[dtype_str] = dtype
    if len(shape) > _MAX_DIMS:
        raise _BadExt(f"an array of {len(shape)} dimensions, more than {_MAX_DIMS}")
    for d in shape:
        if type(d) is not int or d < 0:  # msgpack gives plain ints (never bools for ints)
            raise _BadExt(f"bad shape {reprlib.repr(shape)}: expected non-negative ints")
    return dtype


def _check_dtype(dtype_str: str) -> np.dtype:
    if len(dtype_str) > _MAX_DTYPE_CHARS:
        raise _BadExt(f"dtype {reprlib.repr(dtype_str)} is longer than {_MAX_DTYPE_CHARS} characters")
    try:
        dtype = np.dtype(dtype_str)
    except Exception:  # noqa: BLE001 - NumPy raises TypeError, ValueError, SyntaxError, ...
        raise _BadExt(f"unknown dtype {reprlib.repr(dtype_str)}") from None
    if dtype.kind not in _SENDABLE_KINDS or dtype.hasobject or dtype.itemsize == 0:
        raise _BadExt(f"refused dtype {reprlib.repr(dtype_str)}: only plain numeric, bytes, str and "
                      "datetime arrays with items of at least one byte are accepted")
    return dtype


def _oob_placeholder(payload: bytes, oob: list[np.ndarray] | None) -> np.ndarray:
    """The empty array an out-of-band array's bytes will be read into (appended to ``oob``)."""
    if oob is None:
        raise _BadExt("an out-of-band array (extension type 4), which only trainstack's own worker "
                      "processes send")
    try:
        header = unpackb(payload, raw=False)
    except Exception as e:  # noqa: BLE001 - msgpack raises many kinds; all mean "malformed"
        raise _BadExt(f"an out-of-band array's header is not msgpack ({_describe(e)})") from None
    if (not isinstance(header, list) or len(header) != 2 or not isinstance(header[0], str)
            or not isinstance(header[1], list)):
        raise _BadExt(f"an out-of-band array must be [dtype str, shape list], got {reprlib.repr(header)}")
    dtype = _check_header_dtype_shape(*header)
    try:
        arr = np.empty(header[1], dtype=dtype)
    except (ValueError, MemoryError) as e:
        raise _BadExt(f"shape {reprlib.repr(tuple(header[1]))} of {dtype} is not allocatable: {e}") from None
    oob.append(arr)
    return arr


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
    if code == _EXT_OOB_NDARRAY:
        return _oob_placeholder(payload, None)
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


def loads(data: bytes, *, peer: str = "the peer", trusted: bool = False,
          oob: list[np.ndarray] | None = None) -> Any:
    """Decode msgpack ``data`` made by :func:`dumps`.

    Anything else (truncated, trailing bytes, an unknown extension, an array
    whose bytes disagree with its shape, pickle) raises :class:`FrameError`
    naming ``peer`` and what was wrong. Nothing the peer claims (a length, a
    shape) is allocated before it is checked against the bytes of ``data``.
    ``trusted`` (a worker process of this trainer, or its trainer) also accepts dict keys
    that are not str or bytes. ``oob`` (a list, only for a trainstack worker's connection):
    accept out-of-band arrays; each becomes a new uninitialized array, appended to ``oob``,
    whose bytes the caller reads from the connection (see :func:`recv_frame`).
    """
    hook = _ext_hook
    if oob is not None:
        def hook(code: int, payload: bytes) -> Any:
            if code == _EXT_OOB_NDARRAY:
                return _oob_placeholder(payload, oob)
            return _ext_hook(code, payload)
    try:
        # unpackb's default limits (max_bin_len, max_array_len, ...) are len(data): a header
        # claiming more items or bytes than the frame holds is refused before any allocation
        obj = unpackb(data, raw=False, ext_hook=hook, strict_map_key=not trusted)
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
            if name == "datapoints":  # several datapoints: name the path inside the one that fails
                found = next(filter(None, (_find_unsendable(dp, "datapoint") for dp in value)), None)
            else:
                found = _find_unsendable(value, name)
            if found is not None:
                raise UnsendableError(f"cannot send {found[0]}: {found[1]}") from None
        raise UnsendableError(f"cannot send a {kind!r} frame: {e}") from None


def _oob_default(buffers: list[memoryview], min_bytes: int) -> Any:
    def default(obj: Any) -> Any:
        if isinstance(obj, np.ndarray) and obj.nbytes >= min_bytes:
            _check_sendable(obj.dtype, "an array")
            flat = np.ascontiguousarray(obj).reshape(-1)
            buffers.append(memoryview(flat.view(np.uint8)))  # type: ignore[arg-type]  # NumPy: __buffer__ on 3.12+
            return msgpack.ExtType(_EXT_OOB_NDARRAY, _pack_plain([obj.dtype.str, list(obj.shape)]))
        return _default(obj)
    return default


def encode_frame_oob(kind: str, min_bytes: int, **fields: Any) -> tuple[bytes, list[memoryview]]:
    """:func:`encode_frame`, with the arrays of at least ``min_bytes`` bytes sent out of band:
    the frame, and the raw bytes of those arrays (C-contiguous, as flat byte views of the
    arrays themselves: send them before the arrays change), in order. For trainstack's own
    processes only (:func:`send_frame`, :func:`recv_frame`)."""
    buffers: list[memoryview] = []
    _check_frame(kind, fields, "the frame to send")
    try:
        frame = packb({"kind": kind, **fields}, default=_oob_default(buffers, min_bytes),
                      use_bin_type=True, strict_types=True)
    except (TypeError, ValueError, OverflowError):
        return encode_frame(kind, **fields), []  # raises UnsendableError naming what
    return frame, buffers


def pack_datapoint_oob(datapoint: Any, min_bytes: int) -> tuple[bytes, list[memoryview]]:
    """One datapoint packed as :func:`encode_frame_oob` packs it inside a frame, for
    :func:`results_frame`: its msgpack bytes and its out-of-band buffers."""
    buffers: list[memoryview] = []
    try:
        packed = packb(datapoint, default=_oob_default(buffers, min_bytes), use_bin_type=True, strict_types=True)
    except (TypeError, ValueError, OverflowError):
        dumps(datapoint)  # raises UnsendableError naming the path inside the datapoint
        raise
    return packed, buffers


def results_frame(count: int, packed: list[bytes]) -> bytes:
    """A ``results`` frame answering ``count`` tasks with the datapoints ``packed`` by
    :func:`pack_datapoint_oob` (what :func:`encode_frame_oob` makes of the same datapoints)."""
    return _frame_of_packed("results", "count", count, packed)


def chunk_frame(pass_num: int, packed: list[bytes]) -> bytes:
    """A ``chunk`` frame of pass ``pass_num`` holding the datapoints ``packed`` by
    :func:`pack_datapoint_oob`, in order."""
    return _frame_of_packed("chunk", "pass_num", pass_num, packed)


def _frame_of_packed(kind: str, field: str, value: int, packed: list[bytes]) -> bytes:
    """``{"kind": kind, field: value, "datapoints": [...]}`` with the datapoints already packed:
    the frame's head, then their bytes as they are."""
    packer = _plain_packer()
    head = (packer.pack_map_header(3) + packer.pack("kind") + packer.pack(kind) + packer.pack(field)
            + packer.pack(value) + packer.pack("datapoints") + packer.pack_array_header(len(packed)))
    return b"".join([head, *packed])


def decode_frame(data: bytes, *, peer: str = "the peer", trusted: bool = False,
                 oob: list[np.ndarray] | None = None) -> dict[str, Any]:
    """Decode and check one frame from ``peer``; a malformed one raises :class:`FrameError`.
    ``trusted`` and ``oob``: as for :func:`loads`."""
    frame = loads(data, peer=peer, trusted=trusted, oob=oob)
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
        if not isinstance(value, types) or (types == (int,) and (isinstance(value, bool) or value < 0)):  # type: ignore[operator]
            raise FrameError(f"malformed {what}: field {name!r} of a {kind!r} frame is "
                             f"{reprlib.repr(value)}")
