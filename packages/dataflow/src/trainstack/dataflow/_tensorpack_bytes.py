"""The bytes tensorpack 0.11 stores and sends: LMDB values, TFRecord records, ZMQ frames.

tensorpack 0.11 serializes each datapoint with ``tensorpack.utils.serialize.dumps``,
which by default (``TENSORPACK_SERIALIZE`` unset) is ``pickle.dumps(dp, protocol=-1)``;
with ``TENSORPACK_SERIALIZE=msgpack`` it is msgpack with msgpack-numpy's layout of
arrays (a map ``{b"nd": True, b"type": dtype.str, b"kind": b"", b"shape": [...],
b"data": raw bytes}``, NumPy scalars the same with ``b"nd": False``).

:func:`dumps` writes either; :func:`loads` reads either. Unpickling runs whatever code
the bytes name, so pickle is read only when the caller allows it (``"pickle"`` or
``"auto"``); ``"msgpack"`` refuses pickled bytes and builds only numbers, str, bytes,
lists, dicts and NumPy arrays of plain dtypes (no object or structured arrays).
"""
from __future__ import annotations

import pickle
from typing import Any

import numpy as np

from .codec import packb, unpackb  # msgpack's own, even after msgpack_numpy.patch()

SERIALIZERS = ("pickle", "msgpack")
READ_MODES = ("auto", "pickle", "msgpack")
_MAX_LEN = 1_000_000_000  # tensorpack's MAX_MSGPACK_LEN
_PLAIN_KINDS = "biufcSUmM"


def check_serializer(who: str, serializer: str, modes: tuple[str, ...]) -> str:
    if serializer not in modes:
        raise ValueError(f"{who}: serializer must be one of {', '.join(map(repr, modes))}, "
                         f"got {serializer!r}")
    return serializer


def is_pickle(data: Any) -> bool:
    """Whether ``data`` starts like a pickle of protocol 2 or later (tensorpack writes 5 on
    Python 3.8+). msgpack's ``0x80`` is an empty map, a whole value of one byte."""
    view = memoryview(data)
    return len(view) > 2 and view[0] == 0x80 and 2 <= view[1] <= 5


def _encode(obj: Any) -> Any:
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind not in _PLAIN_KINDS:
            raise TypeError(f"msgpack cannot hold a NumPy array of dtype {obj.dtype} (object and "
                            "structured arrays need pickle): use serializer='pickle'")
        return {b"nd": True, b"type": obj.dtype.str, b"kind": b"", b"shape": list(obj.shape),
                b"data": np.ascontiguousarray(obj).tobytes()}
    if isinstance(obj, (np.bool_, np.number)):
        return {b"nd": False, b"type": obj.dtype.str, b"data": obj.tobytes()}
    raise TypeError(f"msgpack cannot hold an object of type {type(obj).__name__}: use serializer='pickle'")


def _decode(obj: dict[Any, Any]) -> Any:
    if b"nd" not in obj:
        return obj
    try:
        dtype = np.dtype(obj[b"type"])
        if dtype.kind not in _PLAIN_KINDS or obj.get(b"kind", b"") != b"":
            raise ValueError(f"dtype {obj[b'type']!r} of kind {obj.get(b'kind')!r} is not a plain dtype")
        data = obj[b"data"]
        if obj[b"nd"] is True:
            shape = tuple(int(d) for d in obj[b"shape"])
            if int(np.prod(shape, dtype=np.int64)) * dtype.itemsize != len(data):
                raise ValueError(f"shape {shape} of {dtype} needs a different number of bytes than the "
                                 f"{len(data)} given")
            return np.frombuffer(data, dtype=dtype).reshape(shape).copy()
        if len(data) != dtype.itemsize:
            raise ValueError(f"a {dtype} scalar needs {dtype.itemsize} bytes, got {len(data)}")
        return np.frombuffer(data, dtype=dtype)[0]
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(f"malformed msgpack-numpy array {sorted(map(repr, obj))}: {e}") from None


def dumps(obj: Any, serializer: str = "pickle") -> bytes:
    """``obj`` as tensorpack 0.11's ``dumps`` writes it with ``serializer``."""
    if serializer == "pickle":
        return pickle.dumps(obj, protocol=-1)
    return packb(obj, use_bin_type=True, default=_encode)


def loads(data: Any, serializer: str = "auto", *, source: str = "the data") -> Any:
    """A datapoint from bytes written by :func:`dumps` or by tensorpack 0.11. ``"auto"``
    unpickles pickled bytes (which runs the code they name: trusted sources only) and decodes
    msgpack otherwise; ``"msgpack"`` refuses pickled bytes."""
    if is_pickle(data):
        if serializer == "msgpack":
            raise ValueError(f"{source} is pickled (tensorpack's default format), and serializer='msgpack' "
                             "refuses pickle, since unpickling runs code; pass serializer='auto' if you "
                             "trust its source")
        return pickle.loads(data)
    if serializer == "pickle":
        raise ValueError(f"{source} is not a pickle (it does not start with a pickle protocol header); "
                         "pass serializer='auto' or 'msgpack' to read msgpack")
    try:
        return unpackb(data, raw=False, object_hook=_decode, strict_map_key=False,
                               max_bin_len=_MAX_LEN, max_str_len=_MAX_LEN, max_array_len=_MAX_LEN,
                               max_map_len=_MAX_LEN)
    except Exception as e:  # noqa: BLE001 - msgpack raises several kinds
        raise ValueError(f"{source} is neither a pickle nor valid msgpack: {type(e).__name__}: {e}") from None
