"""Remote input: serve a dataflow over TCP on one host, train from it on another.

:func:`serve_dataflow` (or :class:`DataFlowServer`) runs next to the data
and sends pass after pass of it as msgpack frames (:mod:`.codec`);
:class:`RemoteInput` (a :class:`QueueInput` over :class:`RemoteDataFlow`)
receives them in the trainer. Connections use ``multiprocessing.connection``
with a shared ``authkey``: both sides prove they know it (an HMAC challenge)
before any data moves, and a peer without it is refused and logged. Frames
are never unpickled, so even a peer that has the key can at worst send bad
data, which is refused with :class:`FrameError`, as is a frame larger than
``max_frame_bytes``. The data is not encrypted: use a trusted network or a
tunnel (e.g. ``ssh -L``).

A server serves one client at a time, pass after pass, until the client
disconnects, then serves the next; each client starts at the dataflow's
first pass. The first frame tells the client the size of a pass (when the
dataflow has a ``__len__``), which must agree with the client's ``size``.

Handshakes run in threads of their own, apart from the thread that serves
data, each given ``handshake_timeout`` seconds, so a peer that connects and
then sends nothing, or garbage, or half a message, holds up neither the
client being served nor the others: it is dropped when its handshake fails
or times out, and logged with the reason (a malformed frame, a wrong key, the
deadline, leaving). At most ``max_handshakes`` run at once; a connection
beyond them ends the oldest running handshake, so that a burst of silent
peers cannot lock out a client that answers at once.

A client that stops reading is dropped (and logged) once a frame has made
no progress for ``send_timeout`` seconds; the server goes on with the next.
One stop event, set by :meth:`DataFlowServer.close`, ends every thread of
the server: close() joins them and closes every socket, and wakes a send
blocked on a client at once. A :class:`RemoteDataFlow`'s close() likewise
wins over a reset_state() connecting in another thread.
"""
from __future__ import annotations

import errno
import hashlib
import itertools
import logging
import os
import queue
import selectors
import socket
import struct
import threading
import time
import traceback
from multiprocessing import AuthenticationError
from multiprocessing.connection import FAILURE, Connection, answer_challenge, deliver_challenge
from typing import Any, Iterator

from trainstack.dataflow.codec import decode_frame, encode_frame
from trainstack.dataflow.protocol import dataflow_len_or_none, numbered_passes, reset_dataflow
from trainstack.loop.checks import check_int, check_number

from .errors import EmptyDataFlowError, FrameError, InputError, InputWorkerError
from .queue import QueueInput

__all__ = ["serve_dataflow", "DataFlowServer", "RemoteDataFlow", "RemoteInput", "DEFAULT_MAX_FRAME_BYTES",
           "DEFAULT_HANDSHAKE_TIMEOUT", "DEFAULT_MAX_HANDSHAKES", "DEFAULT_SEND_TIMEOUT"]

logger = logging.getLogger("trainstack.inputs")

#: The largest frame (one encoded datapoint) sent or accepted by default: 256 MiB.
DEFAULT_MAX_FRAME_BYTES = 256 * 2**20
#: Seconds a connecting peer has to complete the authentication handshake by default: two
#: round trips and two HMACs take milliseconds, so a peer still at it after this is not a client.
DEFAULT_HANDSHAKE_TIMEOUT = 5.0
#: How many handshakes a server runs at once by default (each in a thread).
DEFAULT_MAX_HANDSHAKES = 32
#: Seconds a frame may make no progress (its client reads nothing) before the server drops that
#: client by default; long, because a trainer pauses reading while its callbacks run (evaluation).
DEFAULT_SEND_TIMEOUT = 300.0
_POLL_S = 0.25  # how often a waiting client (or the server's accepting thread) checks whether it was closed


def _parse_address(address: Any) -> tuple[str, int]:
    if isinstance(address, str):
        host, sep, port = address.rpartition(":")
        if sep and port.isdigit():
            return host, int(port)
    elif (isinstance(address, (tuple, list)) and len(address) == 2 and isinstance(address[0], str)
          and isinstance(address[1], int) and not isinstance(address[1], bool)):
        return address[0], address[1]
    raise ValueError(f"an address must be (host, port) or 'host:port', got {address!r}")


def _check_authkey(authkey: Any) -> bytes:
    if isinstance(authkey, str):
        authkey = authkey.encode()
    if not isinstance(authkey, bytes) or not authkey:
        raise ValueError("authkey must be non-empty bytes (or str) shared by the server and its "
                         f"clients; got {type(authkey).__name__}")
    return authkey


def _peer(address: tuple[str, int] | None) -> str:
    return "an unknown address" if address is None else f"{address[0]}:{address[1]}"


class _ClientGone(Exception):
    """Sending to the client being served ended: ``why`` is "disconnected", "stalled" (nothing
    sent for send_timeout seconds) or "closed" (the server was closed)."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


# How a handshake failed. The peer's doing: it sent a well-formed digest of another key (or
# refused ours), sent what is not the handshake, took too long, or left. This side's doing:
# another peer evicted it (max_handshakes), or the server or client was closed.
_WRONG_KEY, _MALFORMED, _TIMEOUT, _LEFT, _EVICTED, _CLOSED = (
    "wrong key", "malformed", "timeout", "left", "evicted", "closed")


class _HandshakeFailed(Exception):
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


class _Handshake:
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
        """End the handshake as failed with ``kind`` (_TIMEOUT, _EVICTED, _CLOSED) unless it is over."""
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
        descriptor (``sock`` stays open: its owner closes it). Raises :class:`_HandshakeFailed`."""
        with self._lock:
            if self._aborted is not None:
                raise _HandshakeFailed(self._aborted, "ended before it began")
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
            raise _HandshakeFailed(self._aborted, "ended as it completed")
        return conn

    def _failure(self, e: Exception, last: bytes | None) -> _HandshakeFailed:
        what = _describe(e)
        if self._aborted is not None:  # the abort's shutdown is what made the read or write fail
            return _HandshakeFailed(self._aborted, what)
        if isinstance(e, AuthenticationError):  # a digest that did not match, or what is no digest
            return _HandshakeFailed(_WRONG_KEY if last == FAILURE or _is_digest(last) else _MALFORMED, what)
        if isinstance(e, AssertionError) or (  # answer_challenge's check that a challenge came
                isinstance(e, OSError) and not isinstance(e, ConnectionError)
                and str(e) in ("bad message length", "got end of file during message")):
            return _HandshakeFailed(_MALFORMED, what)
        return _HandshakeFailed(_LEFT, what)  # EOFError, a reset, ...


class DataFlowServer:
    """Listens on ``address`` (``(host, port)`` or ``'host:port'``; port 0 picks a free one,
    see :attr:`address`) and serves ``dataflow`` to clients that know ``authkey``.

    A connecting peer has ``handshake_timeout`` seconds to authenticate; at
    most ``max_handshakes`` handshakes run at once, a newer one ending the
    oldest; a client being served that reads nothing for ``send_timeout``
    seconds is dropped (see the module docstring).
    """

    def __init__(self, dataflow: Any, address: Any, authkey: bytes | str, *,
                 max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
                 handshake_timeout: float = DEFAULT_HANDSHAKE_TIMEOUT,
                 max_handshakes: int = DEFAULT_MAX_HANDSHAKES,
                 send_timeout: float = DEFAULT_SEND_TIMEOUT) -> None:
        self.dataflow = dataflow
        self.max_frame_bytes = check_int("DataFlowServer", "max_frame_bytes", max_frame_bytes, minimum=1)
        self.handshake_timeout = check_number("DataFlowServer", "handshake_timeout", handshake_timeout,
                                              greater_than=0, note="seconds")
        self.max_handshakes = check_int("DataFlowServer", "max_handshakes", max_handshakes, minimum=1)
        self.send_timeout = check_number("DataFlowServer", "send_timeout", send_timeout, greater_than=0,
                                         note="seconds")
        self._authkey = _check_authkey(authkey)
        # a deep backlog: a burst of peers must not make the kernel drop a client's SYN (1 s to retry)
        self._socket = socket.create_server(_parse_address(address), backlog=128)
        self._socket.settimeout(_POLL_S)  # the accepting thread checks the stop event between waits
        self._stop = threading.Event()  # set by close(); every thread and socket of the server obeys it
        self._lock = threading.Lock()  # guards what close() takes over: the fields below
        self._ready: queue.Queue[tuple[socket.socket, str] | None] = queue.Queue()  # authenticated
        self._handshakes: dict[_Handshake, None] = {}  # running, oldest first
        self._threads: list[threading.Thread] = []  # the handshakes' threads, for close() to join
        self._serving: socket.socket | None = None  # the client being served
        self._serve_threads: set[int] = set()  # the threads running serve()
        self._served_all = threading.Condition(self._lock)  # notified when a serve() returns
        # handshakes start now, so that clients connecting before serve() wait for their 'hello'
        self._acceptor = threading.Thread(target=self._accept_loop, daemon=True,
                                          name=f"DataFlowServer accept {_peer(self.address)}")
        self._acceptor.start()

    @property
    def address(self) -> tuple[str, int]:
        """The (host, port) the server listens on."""
        return self._socket.getsockname()[:2]

    def serve(self, max_clients: int | None = None) -> None:
        """Serve authenticated clients one after another; return after ``max_clients`` (None:
        never) or when :meth:`close` is called.

        An error of the dataflow is sent to the client, then raised here.
        Peers that fail or stall their handshake, and clients that stop
        reading, are logged and dropped without holding up the others.
        """
        if self._stop.is_set():
            raise OSError("DataFlowServer.serve(): the server was closed")
        reset_dataflow(self.dataflow)
        logger.info("serving %s on %s", type(self.dataflow).__name__, _peer(self.address))
        with self._lock:
            self._serve_threads.add(threading.get_ident())
        try:
            served = 0
            while max_clients is None or served < max_clients:
                item = self._ready.get()
                if item is None:  # closed
                    self._ready.put(None)  # for another serve() waiting, if any
                    return
                sock, peer = item
                with self._lock:  # close() shuts down the client being served: register it first
                    if self._stop.is_set():
                        sock.close()
                        continue  # close() queues None after draining: the next get() returns
                    self._serving = sock
                served += 1
                try:
                    self._stream(sock, peer)
                finally:
                    with self._lock:
                        self._serving = None
                    sock.close()
        finally:
            with self._lock:
                self._serve_threads.discard(threading.get_ident())
                self._served_all.notify_all()

    def close(self, timeout: float = 10.0) -> None:
        """Stop: the listening socket and the running handshakes are closed (their threads
        joined), the clients waiting are disconnected, and so is the one being served (a send
        blocked on it wakes at once). A :meth:`serve` running in another thread is waited for,
        up to ``timeout`` seconds: it returns as soon as its send wakes or the dataflow yields."""
        with self._lock:
            self._stop.set()
            handshakes = list(self._handshakes)
            serving = self._serving
            if serving is not None:  # under the lock: serve() closes it only after letting go of it
                try:
                    serving.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        for handshake in handshakes:
            handshake.abort(_CLOSED)
        self._acceptor.join()  # it closes the listening socket (closing it under its accept() would race)
        with self._lock:  # no handshake starts once the acceptor has ended
            threads = list(self._threads)
        for thread in threads:
            thread.join()  # each ends at once: its socket was shut down, or it saw the stop event
        while True:  # a handshake that completed before the stop queued its client
            try:
                item = self._ready.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                item[0].close()
        self._ready.put(None)  # wakes serve()
        me = threading.get_ident()
        with self._lock:
            if not self._served_all.wait_for(lambda: not self._serve_threads - {me}, timeout):
                logger.warning("DataFlowServer.close(): serve() did not return within %s s (the dataflow "
                               "has not yielded since)", timeout)

    def __enter__(self) -> DataFlowServer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _accept_loop(self) -> None:
        try:
            while not self._stop.is_set():
                self._expire_handshakes()
                try:
                    sock, address = self._socket.accept()
                except TimeoutError:
                    continue
                except OSError as e:  # e.g. out of file descriptors: wait rather than spin
                    logger.warning("accepting a connection failed: %s: %s", type(e).__name__, e)
                    self._stop.wait(_POLL_S)
                    continue
                self._start_handshake(sock, _peer(address))
        finally:
            self._socket.close()

    def _expire_handshakes(self) -> None:
        """Abort the handshakes past their deadline (checked every _POLL_S at least)."""
        now = time.monotonic()
        with self._lock:
            expired = [h for h in self._handshakes if h.deadline <= now]
        for handshake in expired:
            handshake.abort(_TIMEOUT)

    def _start_handshake(self, sock: socket.socket, peer: str) -> None:
        """Run ``sock``'s handshake in a thread; at max_handshakes, the oldest running one ends
        (evicted) to make room: a legitimate client completes its own in milliseconds."""
        handshake = _Handshake(sock, peer, self.handshake_timeout)
        with self._lock:
            if self._stop.is_set():
                sock.close()
                return
            evicted = None
            if len(self._handshakes) >= self.max_handshakes:
                evicted = next(iter(self._handshakes))
                del self._handshakes[evicted]
            self._handshakes[handshake] = None
            thread = threading.Thread(target=self._handshake, args=(handshake,), daemon=True,
                                      name=f"DataFlowServer handshake {peer}")
            self._threads = [t for t in self._threads if t.is_alive()] + [thread]
        if evicted is not None:
            evicted.abort(_EVICTED)
        thread.start()

    def _handshake(self, handshake: _Handshake) -> None:
        """Authenticate a peer; queue it for serve(), or log why it failed and drop it."""
        queued = False
        try:
            handshake.run(self._authkey, server=True).close()  # serve() sends on the socket itself
            with self._lock:  # close() drains the queue after setting the stop event under this lock
                if not self._stop.is_set():
                    self._ready.put((handshake.sock, handshake.peer))
                    queued = True
        except _HandshakeFailed as e:
            self._log_failed_handshake(handshake, e)
        finally:
            with self._lock:
                self._handshakes.pop(handshake, None)
            if not queued:
                handshake.sock.close()

    def _log_failed_handshake(self, handshake: _Handshake, e: _HandshakeFailed) -> None:
        peer = handshake.peer
        if e.kind == _WRONG_KEY:
            logger.warning("refused a connection from %s: it failed authentication (%s); its authkey "
                           "differs from this server's", peer, e)
        elif e.kind == _MALFORMED:
            logger.warning("dropped a connection from %s: it sent a malformed handshake frame (%s); it "
                           "does not speak the authentication handshake of a RemoteDataFlow", peer, e)
        elif e.kind == _TIMEOUT:
            logger.warning("dropped a connection from %s: it did not complete the handshake within "
                           "handshake_timeout=%s s", peer, self.handshake_timeout)
        elif e.kind == _EVICTED:
            logger.warning("dropped a connection from %s: it was the oldest of max_handshakes=%d handshakes "
                           "running (for %.1f s) when another peer connected", peer, self.max_handshakes,
                           time.monotonic() - handshake.started)
        elif e.kind == _CLOSED:
            logger.debug("dropped a connection from %s during its handshake: the server was closed", peer)
        else:
            logger.warning("dropped a connection from %s: it disconnected during the handshake (%s)", peer, e)

    def _stream(self, sock: socket.socket, peer: str) -> None:
        logger.info("serving a client at %s", peer)
        sock.settimeout(self.send_timeout)  # each send() waits this long at most for room to write
        try:
            self._send(sock, encode_frame("hello", size=_len_or_none(self.dataflow)))
            for pass_num in itertools.count():
                empty = True
                for datapoint in self.dataflow:
                    empty = False
                    self._send(sock, encode_frame("data", pass_num=pass_num, datapoint=datapoint))
                if empty:
                    raise EmptyDataFlowError(f"the served dataflow {type(self.dataflow).__name__} "
                                             "yielded no datapoint in a whole pass")
                self._send(sock, encode_frame("end_of_pass", pass_num=pass_num))
        except _ClientGone as e:
            if e.why == "stalled":
                logger.warning("dropped the client at %s: it read nothing for send_timeout=%s s (a frame "
                               "stayed unsent); serving the next client", peer, self.send_timeout)
            elif e.why == "closed":
                logger.info("stopped serving the client at %s: the server was closed", peer)
            else:
                logger.info("the client at %s disconnected", peer)
        except BaseException as e:
            logger.error("serving %s failed: %s: %s", peer, type(e).__name__, e)
            try:
                # not held to max_frame_bytes: the client must learn why, and tracebacks are small
                self._send(sock, encode_frame("error", message=traceback.format_exc()), limit=False)
            except _ClientGone:
                pass
            raise

    def _send(self, sock: socket.socket, frame: bytes, limit: bool = True) -> None:
        """Send ``frame`` as one message of multiprocessing.connection (what the client's
        ``recv_bytes`` reads): its length (4 bytes, or -1 and 8 bytes), then its bytes."""
        if limit and len(frame) > self.max_frame_bytes:
            raise FrameError(f"a datapoint encodes to {len(frame)} bytes, more than max_frame_bytes="
                             f"{self.max_frame_bytes}; raise it on the server and the client")
        if self._stop.is_set():
            raise _ClientGone("closed")
        n = len(frame)
        header = struct.pack("!i", n) if n <= 0x7FFFFFFF else struct.pack("!iQ", -1, n)
        try:
            for part in ((header + frame,) if n <= 16384 else (header, frame)):
                view = memoryview(part)
                while view:  # a send() that finds no room for send_timeout raises TimeoutError
                    view = view[sock.send(view):]
        except TimeoutError:
            raise _ClientGone("closed" if self._stop.is_set() else "stalled") from None
        except OSError:  # BrokenPipeError, ConnectionResetError, or close() shut the socket down
            raise _ClientGone("closed" if self._stop.is_set() else "disconnected") from None


def _len_or_none(dataflow: Any) -> int | None:
    return dataflow_len_or_none(dataflow)


def serve_dataflow(dataflow: Any, address: Any, authkey: bytes | str, *,
                   max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES, max_clients: int | None = None,
                   handshake_timeout: float = DEFAULT_HANDSHAKE_TIMEOUT,
                   max_handshakes: int = DEFAULT_MAX_HANDSHAKES,
                   send_timeout: float = DEFAULT_SEND_TIMEOUT) -> None:
    """Serve pass after pass of ``dataflow`` on ``address`` to clients with ``authkey``; blocks.

    Clients are served one at a time (:class:`RemoteInput` or
    :class:`RemoteDataFlow` on the training host); returns after ``max_clients``
    clients (None: serves forever). See :class:`DataFlowServer` for the rest.
    """
    with DataFlowServer(dataflow, address, authkey, max_frame_bytes=max_frame_bytes,
                        handshake_timeout=handshake_timeout, max_handshakes=max_handshakes,
                        send_timeout=send_timeout) as server:
        server.serve(max_clients)


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
    """Connect ``sock`` within ``timeout`` seconds, checking ``stop`` every _POLL_S (a blocking
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
            if selector.select(min(_POLL_S, remaining)):
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
        self.address = _parse_address(address)
        self._authkey = _check_authkey(authkey)
        self.size = size
        self.max_frame_bytes = check_int("RemoteDataFlow", "max_frame_bytes", max_frame_bytes, minimum=1)
        self.timeout = timeout
        self._lock = threading.Lock()  # guards the connection's fields below against a close() elsewhere
        self._stop = _Stop(None)  # the current connection's (set: none): every step of it checks it
        self._stop.event.set()
        self._closed = False  # close() was called since the last reset_state(): iterating does not connect
        self._handshake: _Handshake | None = None  # the connection reset_state() is making
        self._sock: socket.socket | None = None  # the connection: its socket (for shutdown) ...
        self._conn: Connection | None = None  # ... and the Connection reading it (another descriptor)
        self._failed: str | None = None  # why a failed iteration disconnected
        self._next_pass = 0   # the pass the next iteration delivers
        self._frame_pass = 0  # the pass the next frame belongs to

    @property
    def name(self) -> str:
        return f"RemoteDataFlow({_peer(self.address)})"

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
        peer = _peer(self.address)
        with self._lock:  # checked and armed at once: a close() or stop from now on ends this connection
            if owner is not None and owner.is_set():
                raise InputError(f"{self.name}: not connecting to {peer}: its owner was stopped")
            if self._closed and not explicit:
                raise InputError(f"{self.name} was closed; call reset_state() to connect again")
            stop = self._stop = _Stop(owner)
            self._closed, self._failed = False, None
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
        peer = _peer(self.address)
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
        peer = _peer(self.address)
        handshake = _Handshake(sock, peer, timeout)
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
            timer = threading.Timer(timeout, handshake.abort, args=(_TIMEOUT,))
            timer.daemon = True
            timer.start()
            try:
                return handshake.run(self._authkey, server=False)
            except _HandshakeFailed as e:
                raise self._handshake_error(e, timeout) from None
            finally:
                timer.cancel()
                timer.join()
        finally:
            with self._lock:
                if self._handshake is handshake:
                    self._handshake = None

    def _handshake_error(self, e: _HandshakeFailed, timeout: float) -> InputError:
        peer = _peer(self.address)
        if e.kind == _WRONG_KEY:
            return InputError(f"{self.name}: authentication with the server at {peer} failed ({e}): "
                              "this authkey is not the server's")
        if e.kind == _TIMEOUT:
            return InputError(f"{self.name}: the server at {peer} did not complete the authentication "
                              f"handshake within {timeout} s; is it a DataFlowServer?")
        if e.kind == _CLOSED:
            return InputError(f"{self.name} was closed while it was connecting to {peer}")
        if e.kind == _MALFORMED:
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
            handshake.abort(_CLOSED)
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
                                     f"from {_peer(self.address)} while on pass {self._frame_pass}")
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
        peer = _peer(self.address)
        conn = self._conn
        try:
            if conn is None:
                raise OSError("not connected")
            deadline = None if self.timeout is None else time.monotonic() + self.timeout
            while not conn.poll(_POLL_S):  # close() shuts the socket down: poll() returns at once
                if stop.is_set():
                    raise OSError("closed")
                if deadline is not None and time.monotonic() >= deadline:
                    raise InputWorkerError(f"{self.name}: no frame from the server at {peer} for "
                                           f"{self.timeout} s (timeout)")
            data = conn.recv_bytes(self.max_frame_bytes)
        except (EOFError, OSError) as e:
            if stop.is_set():
                raise InputError(f"{self.name} was closed while it was being read") from None
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
                             f"{_peer(self.dataflow.address)} has: pass size= (the served dataflow's "
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
