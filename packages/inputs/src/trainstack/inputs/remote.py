"""Remote input: serve a dataflow over TCP on one host, train from it on another.

:func:`~.remote_server.serve_dataflow` (or :class:`~.remote_server.DataFlowServer`)
runs next to the data and sends pass after pass of it as msgpack frames;
:class:`RemoteInput` (a :class:`QueueInput` over :class:`RemoteDataFlow`)
receives them in the trainer. Both ends prove they know a shared ``authkey``
before any data moves (:mod:`.remote_handshake`), and a peer without it is
refused and logged. Frames are never unpickled, so even a peer that has the
key can at worst send bad data, which is refused with :class:`FrameError`, as
is a frame larger than ``max_frame_bytes``. The data is not encrypted: use a
trusted network or a tunnel (e.g. ``ssh -L``).

A :class:`RemoteDataFlow`'s close() wins over a reset_state() connecting in
another thread: one stop per connection, checked by every path.
"""
from __future__ import annotations

import errno
import logging
import os
import selectors
import socket
import threading
import time
from collections.abc import Iterator
from multiprocessing.connection import Connection
from typing import Any

from trainstack.dataflow.codec import decode_frame
from trainstack.dataflow.protocol import numbered_passes
from trainstack.loop.checks import check_int, check_number

from .errors import FrameError, InputError, InputWorkerError
from .queue import QueueInput
from .remote_handshake import (
    CLOSED,
    DEFAULT_HANDSHAKE_TIMEOUT,
    DEFAULT_MAX_FRAME_BYTES,
    MALFORMED,
    POLL_S,
    TIMEOUT,
    WRONG_KEY,
    Handshake,
    HandshakeFailed,
    check_authkey,
    parse_address,
    peer_name,
)

__all__ = ["RemoteDataFlow", "RemoteInput"]

logger = logging.getLogger("trainstack.inputs")


class _Stop:
    """The stop of one connection of a RemoteDataFlow: its own event (set by close()) and,
    optionally, its owner's (a RemoteInput's thread's); every step of connecting and reading
    checks :meth:`is_set`."""

    def __init__(self, owner: threading.Event | None) -> None:
        self.event = threading.Event()
        self.owner = owner

    def is_set(self) -> bool:
        return self.event.is_set() or (self.owner is not None and self.owner.is_set())


def _connect_socket(sock: socket.socket, sockaddr: Any, timeout: float, stop: _Stop) -> None:
    """Connect ``sock`` within ``timeout`` seconds, checking ``stop`` every POLL_S (a blocking
    connect() could not be interrupted); ``sock`` is left blocking. Raises OSError (TimeoutError)."""
    sock.setblocking(False)
    err = sock.connect_ex(sockaddr)
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        selector.register(sock, selectors.EVENT_WRITE)  # writable: connected, or failed (SO_ERROR)
        while err in _CONNECTING:
            if stop.is_set():
                raise ConnectionAbortedError("closed while connecting")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no connection within {timeout} s")
            if selector.select(min(POLL_S, remaining)):
                err = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
    if err:
        raise OSError(err, os.strerror(err))
    sock.setblocking(True)


_CONNECTING = {errno.EINPROGRESS, errno.EALREADY, errno.EWOULDBLOCK, getattr(errno, "WSAEWOULDBLOCK", -1)}


class RemoteDataFlow:
    """A dataflow whose datapoints come from a :class:`DataFlowServer` at ``address``.

    Connects on :meth:`reset_state` (or the first iteration); each iteration
    is the server's next pass. ``size`` is the number of datapoints per pass
    (``len()``), checked against what the server announces. Raises
    :class:`InputError` when it cannot connect or the key is refused,
    :class:`FrameError` for a malformed or oversized frame, and
    :class:`InputWorkerError` when the server fails, disconnects, or (with
    ``timeout``) sends nothing for ``timeout`` seconds. The authentication
    handshake must complete within ``timeout`` (None: DEFAULT_HANDSHAKE_TIMEOUT) seconds.

    :meth:`close` may come from another thread at any time: it wakes a read
    blocked on the server at once, and a :meth:`reset_state` connecting
    meanwhile fails instead of connecting (close wins); after it, nothing of
    the connection is left open, and iterating needs reset_state() again.
    """

    def __init__(self, address: Any, authkey: bytes | str, *, size: int | None = None,
                 max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES, timeout: float | None = None) -> None:
        size = check_int("RemoteDataFlow", "size", size, minimum=1, none_ok=True, note="datapoints per pass")
        check_number("RemoteDataFlow", "timeout", timeout, greater_than=0, none_ok=True, note="seconds")
        self.address = parse_address(address)
        self._authkey = check_authkey(authkey)
        self.size = size
        self.max_frame_bytes = check_int("RemoteDataFlow", "max_frame_bytes", max_frame_bytes, minimum=1)
        self.timeout = timeout
        self._lock = threading.Lock()  # guards the connection's fields below against a close() elsewhere
        self._stop = _Stop(None)  # the current connection's (set: none): every step of it checks it
        self._stop.event.set()
        self._closed = False  # close() was called since the last reset_state(): iterating does not connect
        self._handshake: Handshake | None = None  # the connection reset_state() is making
        self._sock: socket.socket | None = None  # the connection: its socket (for shutdown) ...
        self._conn: Connection | None = None  # ... and the Connection reading it (another descriptor)
        self._failed: str | None = None  # why a failed iteration disconnected
        self._next_pass = 0   # the pass the next iteration delivers
        self._frame_pass = 0  # the pass the next frame belongs to

    @property
    def name(self) -> str:
        return f"RemoteDataFlow({peer_name(self.address)})"

    def __len__(self) -> int:
        if self.size is None:
            raise TypeError(f"{self.name} does not know the size of the server's passes: pass size=")
        return self.size

    def reset_state(self, stop_event: threading.Event | None = None) -> None:
        """(Re)connect; the next iteration is the server's first pass.

        A :meth:`close` from another thread while this connects wins: the
        connection being made is dropped (its socket closed) and this raises
        :class:`InputError`. ``stop_event`` is a stop of the caller's (a
        :class:`RemoteInput` passes its thread's): while it is set this does
        not connect, and setting it ends the connection as close() does (call
        close() too, to wake a blocked read at once).
        """
        self._connect(stop_event, explicit=True)

    def _connect(self, owner: threading.Event | None, *, explicit: bool) -> None:
        """reset_state(), or (not ``explicit``) the connecting of a first iteration, which a close()
        since the last reset_state() refuses."""
        self._disconnect()
        peer = peer_name(self.address)
        with self._lock:  # checked and armed at once: a close() or stop from now on ends this connection
            if owner is not None and owner.is_set():
                raise InputError(f"{self.name}: not connecting to {peer}: its owner was stopped")
            if self._closed and not explicit:
                raise InputError(f"{self.name} was closed; call reset_state() to connect again")
            stop = self._stop = _Stop(owner)
            self._closed, self._failed = False, None
        sock: socket.socket | None
        sock, conn = self._open(stop)
        with self._lock:
            if not stop.is_set():
                self._sock, self._conn, sock = sock, conn, None
                self._next_pass = self._frame_pass = 0
        if sock is not None:  # closed (or stopped) just as the handshake completed
            conn.close()
            sock.close()
            raise InputError(f"{self.name} was closed while it was connecting to {peer}")
        try:
            hello = self._receive(stop)
            if hello["kind"] != "hello":
                raise FrameError(f"{self.name}: the server at {peer} sent a {hello['kind']!r} frame "
                                 "before its 'hello'")
            if None not in (hello["size"], self.size) and hello["size"] != self.size:
                raise InputError(f"{self.name}: size={self.size}, but a pass of the server at {peer} "
                                 f"has {hello['size']} datapoints; epochs would not be passes")
        except BaseException:
            self._disconnect(stop)  # a connection that cannot be used is not kept open
            raise

    def _open(self, stop: _Stop) -> tuple[socket.socket, Connection]:
        """A socket connected to the server and authenticated, and the Connection reading it;
        the connect and the handshake each get the handshake timeout. Raises InputError."""
        peer = peer_name(self.address)
        timeout = DEFAULT_HANDSHAKE_TIMEOUT if self.timeout is None else self.timeout
        try:
            addresses = socket.getaddrinfo(*self.address, type=socket.SOCK_STREAM)
        except OSError as e:
            raise InputError(f"{self.name}: cannot connect to {peer} ({type(e).__name__}: {e}); "
                             "is serve_dataflow running there?") from e
        error: OSError | None = None
        for family, kind, proto, _, sockaddr in addresses:  # as socket.create_connection does
            sock = socket.socket(family, kind, proto)
            try:
                return sock, self._authenticate(sock, sockaddr, timeout, stop)
            except OSError as e:  # could not connect there: the next address, if any
                sock.close()
                error = e
            except BaseException:
                sock.close()
                raise
        raise InputError(f"{self.name}: cannot connect to {peer} ({type(error).__name__}: {error}); "
                         "is serve_dataflow running there?") from error

    def _authenticate(self, sock: socket.socket, sockaddr: Any, timeout: float, stop: _Stop) -> Connection:
        """Connect ``sock`` and run the handshake, which close() aborts (it is registered for that);
        OSError: the connect failed; InputError: the rest."""
        peer = peer_name(self.address)
        handshake = Handshake(sock, peer, timeout)
        with self._lock:
            if stop.is_set():
                raise InputError(f"{self.name} was closed while it was connecting to {peer}")
            self._handshake = handshake
        try:
            try:
                _connect_socket(sock, sockaddr, timeout, stop)
            except OSError:
                if stop.is_set():
                    raise InputError(f"{self.name} was closed while it was connecting to {peer}") from None
                raise
            timer = threading.Timer(timeout, handshake.abort, args=(TIMEOUT,))
            timer.daemon = True
            timer.start()
            try:
                return handshake.run(self._authkey, server=False)
            except HandshakeFailed as e:
                raise self._handshake_error(e, timeout) from None
            finally:
                timer.cancel()
                timer.join()
        finally:
            with self._lock:
                if self._handshake is handshake:
                    self._handshake = None

    def _handshake_error(self, e: HandshakeFailed, timeout: float) -> InputError:
        peer = peer_name(self.address)
        if e.kind == WRONG_KEY:
            return InputError(f"{self.name}: authentication with the server at {peer} failed ({e}): "
                              "this authkey is not the server's")
        if e.kind == TIMEOUT:
            return InputError(f"{self.name}: the server at {peer} did not complete the authentication "
                              f"handshake within {timeout} s; is it a DataFlowServer?")
        if e.kind == CLOSED:
            return InputError(f"{self.name} was closed while it was connecting to {peer}")
        if e.kind == MALFORMED:
            return InputError(f"{self.name}: the server at {peer} answered the authentication handshake "
                              f"with a malformed frame ({e}); is it a DataFlowServer?")
        return InputError(f"{self.name}: the server at {peer} dropped the connection during the "
                          f"authentication handshake ({e})")

    def close(self) -> None:
        """Disconnect (the server then serves its next client). A reset_state() connecting in
        another thread meanwhile fails instead (close wins); iterating again needs reset_state()."""
        self._disconnect(final=True)

    def _disconnect(self, stop: _Stop | None = None, *, final: bool = False) -> None:
        """End the connection, made or being made (only if it is ``stop``'s, when given): set its
        stop, abort its handshake, shut its socket down (a blocked read wakes at once) and close it.
        The thread making a connection closes that socket itself, once woken."""
        with self._lock:
            self._closed = self._closed or final
            if stop is not None and stop is not self._stop:
                return
            self._stop.event.set()
            handshake, sock, conn = self._handshake, self._sock, self._conn
            self._handshake = self._sock = self._conn = None
        if handshake is not None:
            handshake.abort(CLOSED)
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()
        if conn is not None:
            conn.close()

    def __enter__(self) -> RemoteDataFlow:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __iter__(self) -> Iterator[Any]:
        """The datapoints of the server's next pass. Any error disconnects before it propagates;
        iterating again then needs :meth:`reset_state` (a new connection, the server's stream
        from its start for this client)."""
        if self._failed is not None:
            raise InputError(f"{self.name}: disconnected because an iteration failed ({self._failed}); "
                             "call reset_state() to connect again")
        if self._conn is None:
            self._connect(self._stop.owner, explicit=False)
        stop = self._stop
        pass_num, self._next_pass = self._next_pass, self._next_pass + 1
        try:
            while self._frame_pass <= pass_num:
                frame = self._receive(stop)
                kind = frame["kind"]
                if kind not in ("data", "end_of_pass") or frame["pass_num"] != self._frame_pass:
                    raise FrameError(f"{self.name}: unexpected {kind!r} frame {frame.get('pass_num', '')} "
                                     f"from {peer_name(self.address)} while on pass {self._frame_pass}")
                if kind == "end_of_pass":
                    self._frame_pass += 1
                elif frame["pass_num"] == pass_num:
                    yield frame["datapoint"]
                # else: a datapoint of an earlier pass whose iteration was abandoned midway
        except GeneratorExit:
            raise  # abandoned by the caller: the next iteration goes on
        except BaseException as e:
            if not stop.is_set() or isinstance(e, FrameError):  # not a close() by the caller
                self._failed = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            self._disconnect(stop)
            raise

    def _receive(self, stop: _Stop) -> dict[str, Any]:
        """The next frame of the connection that ``stop`` ends (an 'error' frame is raised as
        InputWorkerError)."""
        peer = peer_name(self.address)
        conn = self._conn
        try:
            if conn is None:
                raise OSError("not connected")
            deadline = None if self.timeout is None else time.monotonic() + self.timeout
            while not conn.poll(POLL_S):  # close() shuts the socket down: poll() returns at once
                if stop.is_set():
                    raise OSError("closed")
                if deadline is not None and time.monotonic() >= deadline:
                    raise InputWorkerError(f"{self.name}: no frame from the server at {peer} for "
                                           f"{self.timeout} s (timeout)")
            data = conn.recv_bytes(self.max_frame_bytes)
        except (EOFError, OSError, TypeError) as e:
            # a close() from another thread may close the Connection inside recv_bytes, which then
            # reads a handle of None (TypeError) instead of raising OSError
            if stop.is_set():
                raise InputError(f"{self.name} was closed while it was being read") from None
            if isinstance(e, TypeError):
                raise
            if isinstance(e, EOFError):
                raise InputWorkerError(f"{self.name}: the server at {peer} closed the connection") from None
            if conn is not None and not conn.readable:  # recv_bytes refused an oversized frame
                self._disconnect(stop)
                raise FrameError(f"{self.name}: refused a frame from {peer} longer than max_frame_bytes="
                                 f"{self.max_frame_bytes}, and disconnected") from None
            raise InputWorkerError(f"{self.name}: lost the connection to {peer}: "
                                   f"{type(e).__name__}: {e}") from e
        frame = decode_frame(data, peer=f"the server at {peer}")
        if frame["kind"] == "error":
            raise InputWorkerError(f"{self.name}: the server at {peer} failed:\n{frame['message']}")
        return frame


class RemoteInput(QueueInput):
    """A :class:`QueueInput` over a :class:`RemoteDataFlow`: a thread receives datapoints from
    the server at ``address`` and enqueues them; the traced step dequeues.

    ``size`` (datapoints per pass, the default ``steps_per_epoch``) is the
    served dataflow's ``len()``. Failures (refused key, malformed frame, the
    server failing or going away) stop training and are raised from
    ``after_train``, as QueueInput raises its thread's errors.
    """

    def __init__(self, address: Any, authkey: bytes | str, size: int | None = None,
                 queue_size: int = 50, *, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
                 timeout: float | None = None) -> None:
        super().__init__(RemoteDataFlow(address, authkey, size=size, max_frame_bytes=max_frame_bytes,
                                        timeout=timeout), queue_size)

    def _skip(self, n: int) -> bool:
        return False  # the server's stream goes on for every client; this one cannot go back in it

    def _size(self) -> int:
        if self.dataflow.size is None:
            raise InputError(f"{self.name} does not know how many datapoints a pass of the server at "
                             f"{peer_name(self.dataflow.address)} has: pass size= (the served dataflow's "
                             "len()) or steps_per_epoch")
        return self.dataflow.size

    def _stream(self) -> Iterator[tuple[int, int, Any]]:
        """Connect under this source's stop event, then pass after pass: a :meth:`stop` racing with
        the thread's connecting wins (no connection is made, or the one being made is dropped)."""
        self.dataflow.reset_state(stop_event=self._stop)
        return numbered_passes(self.dataflow, f"{self.name}'s dataflow")

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the thread and its connection: one stop event, the thread's, which its connection
        obeys too (set first), then a close() that wakes a blocked read or handshake at once."""
        self._stop.set()  # from now on the thread connects no more, and its errors are not training's
        self.dataflow.close()
        super().stop(timeout)
