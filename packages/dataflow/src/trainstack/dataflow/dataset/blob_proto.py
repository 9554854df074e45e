"""caffe's ``BlobProto`` (a ``.binaryproto`` file, as caffe's ``imagenet_mean.binaryproto``): its ``data`` floats.

tensorpack compiled caffe's ``caffe.proto`` with ``protoc`` to read it; the one field needed is read
here from the protobuf wire format directly: ``data`` (field 5, ``repeated float``, packed or not).
The other fields (``num``, ``channels``, ``height``, ``width``, ``shape``, ``diff``, ...) are skipped.
"""
from __future__ import annotations

import numpy as np

__all__ = ["blob_proto_data"]

_DATA_FIELD = 5


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        if pos >= len(buf):
            raise ValueError("BlobProto: truncated varint")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def blob_proto_data(buf: bytes) -> np.ndarray:
    """The ``data`` of a serialized caffe ``BlobProto``, float32, flat (empty if it has none)."""
    chunks: list[np.ndarray] = []
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        field, wire = key >> 3, key & 7
        if wire == 0:
            _, pos = _varint(buf, pos)
        elif wire == 1:
            pos += 8
        elif wire == 2:
            length, pos = _varint(buf, pos)
            if field == _DATA_FIELD:
                chunks.append(np.frombuffer(buf[pos:pos + length], dtype="<f4"))
            pos += length
        elif wire == 5:
            if field == _DATA_FIELD:
                chunks.append(np.frombuffer(buf[pos:pos + 4], dtype="<f4"))
            pos += 4
        else:
            raise ValueError(f"BlobProto: wire type {wire} of field {field} is not protobuf's")
        if pos > len(buf):
            raise ValueError("BlobProto: truncated field")
    return np.concatenate(chunks).astype(np.float32) if chunks else np.zeros([0], np.float32)
