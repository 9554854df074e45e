"""Frames over a multiprocessing Connection (a pipe or a socket pair), with out-of-band arrays.

A frame (:mod:`.codec`) goes as ``send_bytes`` writes it, then the bytes of its out-of-band arrays
back to back, written with ``writev`` from the arrays themselves and read with ``readv`` into
the new arrays: no copy in user space. Between trainstack's own processes only.
"""
from __future__ import annotations

import os
import struct
import sys
from typing import Any

import numpy as np

from .codec import decode_frame

__all__ = ["OOB_MIN_BYTES", "recv_frame", "send_frame"]

_IOV_MAX = 512
#: Arrays of at least this many bytes go out of band between trainstack's processes (where
#: there are readv and writev on a connection's file descriptor; elsewhere, none do).
OOB_MIN_BYTES = 1 << 15 if hasattr(os, "readv") and hasattr(os, "writev") and os.name == "posix" else sys.maxsize


_HAS_VECTORED_IO = hasattr(os, "readv") and hasattr(os, "writev") and os.name == "posix"


def send_frame(conn: Any, frame: bytes, buffers: list[memoryview]) -> None:
    """Send ``frame`` (as ``conn.send_bytes`` would: its length, then its bytes) then the raw
    ``buffers`` (from :func:`encode_frame_oob`) through ``conn``, in one ``writev`` where the
    kernel takes it all (``send_bytes`` makes two writes of a frame over 16 KiB)."""
    if not _HAS_VECTORED_IO:
        conn.send_bytes(frame)
        if buffers:
            raise ValueError("out-of-band arrays need readv and writev")
        return
    n = len(frame)
    header = struct.pack("!i", n) if n <= 0x7FFFFFFF else struct.pack("!iQ", -1, n)
    fd = conn.fileno()
    views = [memoryview(header), memoryview(frame), *(v for v in buffers if v.nbytes)]
    i = 0
    while i < len(views):
        i = _advance(views, i, os.writev(fd, views[i:i + _IOV_MAX]))


def recv_frame(conn: Any, *, peer: str) -> dict[str, Any]:
    """The next frame of ``conn`` (a trainstack worker's or trainer's), with its out-of-band
    arrays read in. EOF (the peer died or closed) raises ``EOFError``."""
    data = conn.recv_bytes()
    oob: list[np.ndarray] = []
    frame = decode_frame(data, peer=peer, trusted=True, oob=oob)
    if oob:
        fd = conn.fileno()
        views = [memoryview(a.reshape(-1).view(np.uint8)) for a in oob if a.nbytes]  # type: ignore[arg-type]
        i = 0
        while i < len(views):
            n = os.readv(fd, views[i:i + _IOV_MAX])
            if n == 0:
                raise EOFError(f"{peer} closed its end in the middle of a frame's arrays")
            i = _advance(views, i, n)
    return frame


def _advance(views: list[memoryview], i: int, n: int) -> int:
    """After a ``writev``/``readv`` of ``views[i:]`` moved ``n`` bytes: drop what was done (the
    first partly done view is cut to its rest, in place) and return the index of the next view."""
    while n:
        size = views[i].nbytes
        if n < size:
            views[i] = views[i][n:]
            break
        n -= size
        i += 1
    return i
