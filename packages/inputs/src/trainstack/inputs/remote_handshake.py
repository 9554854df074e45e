"""What both ends of the remote input share: addresses, the key, and the handshake.

Connections use ``multiprocessing.connection`` with a shared ``authkey``: both
sides prove they know it (an HMAC challenge) before any data moves.
:class:`Handshake` runs one side of it, can be ended early from another thread,
and classifies a failure precisely (:class:`HandshakeFailed`: a malformed frame,
a wrong key, the deadline, the peer leaving), so that the server's log says what
happened, and a peer sending random bytes is never reported as a key mismatch.
"""
from __future__ import annotations

import hashlib
import logging
import os
import socket
import threading
import time
from multiprocessing import AuthenticationError
from multiprocessing.connection import (  # type: ignore[attr-defined]  # FAILURE: not in typeshed
    FAILURE,
    Connection,
    answer_challenge,
    deliver_challenge,
)
from typing import Any

from trainstack.loop.checks import is_int

__all__ = ["DEFAULT_MAX_FRAME_BYTES", "DEFAULT_HANDSHAKE_TIMEOUT", "POLL_S", "parse_address", "check_authkey",
           "peer_name", "HandshakeFailed", "Handshake", "WRONG_KEY", "MALFORMED", "TIMEOUT",
           "LEFT", "EVICTED", "CLOSED"]

logger = logging.getLogger("trainstack.inputs")

#: The largest frame (one encoded datapoint) sent or accepted by default: 256 MiB.
DEFAULT_MAX_FRAME_BYTES = 256 * 2**20
#: Seconds a connecting peer has to complete the authentication handshake by default: two
#: round trips and two HMACs take milliseconds, so a peer still at it after this is not a client.
DEFAULT_HANDSHAKE_TIMEOUT = 5.0
POLL_S = 0.25  # how often a waiting client (or the server's accepting thread) checks whether it was closed


def parse_address(address: Any) -> tuple[str, int]:
    if isinstance(address, str):
        host, sep, port = address.rpartition(":")
        if sep and port.isdigit():
            return host, int(port)
    elif (isinstance(address, (tuple, list)) and len(address) == 2 and isinstance(address[0], str)
          and is_int(address[1])):
        return address[0], int(address[1])
    raise ValueError(f"an address must be (host, port) or 'host:port', got {address!r}")


def check_authkey(authkey: Any) -> bytes:
    if isinstance(authkey, str):
        authkey = authkey.encode()
    if not isinstance(authkey, bytes) or not authkey:
        raise ValueError("authkey must be non-empty bytes (or str) shared by the server and its "
                         f"clients; got {type(authkey).__name__}")
    return authkey


def peer_name(address: tuple[str, int] | None) -> str:
    return "an unknown address" if address is None else f"{address[0]}:{address[1]}"


# How a handshake failed. The peer's doing: it sent a well-formed digest of another key (or
# refused ours), sent what is not the handshake, took too long, or left. This side's doing:
# another peer evicted it (max_handshakes), or the server or client was closed.
WRONG_KEY, MALFORMED, TIMEOUT, LEFT, EVICTED, CLOSED = (
    "wrong key", "malformed", "timeout", "left", "evicted", "closed")


class HandshakeFailed(Exception):
    """A handshake failed; ``kind`` says how (one of the kinds above), the message what was seen."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(detail)
        self.kind = kind


class _RecordingConnection(Connection):
    """A Connection that keeps the last message it received: after a failed handshake, it tells
    a wrong key (a well-formed digest that does not match) from a malformed frame."""

    last: bytes | None = None

    def recv_bytes(self, maxlength: int | None = None) -> bytes:
        self.last = super().recv_bytes(maxlength)
        return self.last


def _is_digest(message: bytes | None) -> bool:
    """Whether ``message`` has the form of a digest in multiprocessing's handshake: an HMAC-MD5
    (16 bytes, Python < 3.12) or ``{name}`` and an HMAC of that hash's size (Python 3.12+)."""
    if message is None:
        return False
    if len(message) == 16:
        return True
    name, sep, mac = message[1:].partition(b"}")
    if message[:1] != b"{" or not sep or not 0 < len(name) <= 20:
        return False
    try:
        return len(mac) == hashlib.new(name.decode("ascii")).digest_size > 0
    except (ValueError, UnicodeDecodeError):  # not a hash's name
        return False


def _describe(e: BaseException, limit: int = 120) -> str:
    text = str(e)
    text = f"{type(e).__name__}: {text}" if text else type(e).__name__
    return text if len(text) <= limit else text[:limit] + "..."


class Handshake:
    """One side of multiprocessing's HMAC handshake over ``sock``, to complete within
    ``timeout`` seconds (``deadline``; whoever watches it calls :meth:`abort`).

    Another thread ends it early with :meth:`abort` (its deadline passed, it was
    evicted, its side was closed): that shuts the socket down, which wakes the
    handshake's blocked read or write (and, on Linux, a pending ``connect``).
    """

    def __init__(self, sock: socket.socket, peer: str, timeout: float) -> None:
        self.sock, self.peer, self.timeout = sock, peer, timeout
        self.started = time.monotonic()
        self.deadline = self.started + timeout
        self._lock = threading.Lock()
        self._aborted: str | None = None  # the kind of failure an abort() gave it
        self._done = False

    def abort(self, kind: str) -> None:
        """End the handshake as failed with ``kind`` (TIMEOUT, EVICTED, CLOSED) unless it is over."""
        with self._lock:  # under the lock: a handshake that has just succeeded keeps its socket whole
            if self._done or self._aborted is not None:
                return
            self._aborted = kind
            try:
                self.sock.shutdown(socket.SHUT_RDWR)
            except OSError:  # not connected (yet, or any more)
                pass

    def run(self, authkey: bytes, *, server: bool) -> Connection:
        """Authenticate (the server challenges first); a Connection over a duplicate of the socket's
        descriptor (``sock`` stays open: its owner closes it). Raises :class:`HandshakeFailed`."""
        with self._lock:
            if self._aborted is not None:
                raise HandshakeFailed(self._aborted, "ended before it began")
        self.sock.setblocking(True)
        conn = _RecordingConnection(os.dup(self.sock.fileno()))
        try:
            if server:
                deliver_challenge(conn, authkey)
                answer_challenge(conn, authkey)
            else:
                answer_challenge(conn, authkey)
                deliver_challenge(conn, authkey)
        except Exception as e:  # noqa: BLE001 - classified below: whatever the peer did, it failed
            conn.close()
            with self._lock:
                self._done = True
            raise self._failure(e, conn.last) from None
        except BaseException:
            conn.close()
            raise
        with self._lock:
            self._done = True
        if self._aborted is not None:  # aborted just as it succeeded: the socket is shut down
            conn.close()
            raise HandshakeFailed(self._aborted, "ended as it completed")
        return conn

    def _failure(self, e: Exception, last: bytes | None) -> HandshakeFailed:
        what = _describe(e)
        if self._aborted is not None:  # the abort's shutdown is what made the read or write fail
            return HandshakeFailed(self._aborted, what)
        if isinstance(e, AuthenticationError):  # a digest that did not match, or what is no digest
            return HandshakeFailed(WRONG_KEY if last == FAILURE or _is_digest(last) else MALFORMED, what)
        if isinstance(e, AssertionError) or (  # answer_challenge's check that a challenge came
                isinstance(e, OSError) and not isinstance(e, ConnectionError)
                and str(e) in ("bad message length", "got end of file during message")):
            return HandshakeFailed(MALFORMED, what)
        return HandshakeFailed(LEFT, what)  # EOFError, a reset, ...
