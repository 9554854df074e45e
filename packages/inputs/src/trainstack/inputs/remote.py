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

Handshakes run in threads of their own, each given ``handshake_timeout``
seconds, so a peer that connects and then sends nothing, or garbage, or half
a message, holds up neither the client being served nor the others: it is
dropped (and logged) when its handshake fails or times out. At most
``max_handshakes`` run at once; connections beyond them are closed at once.
"""
from __future__ import annotations

import itertools
import logging
import os
import queue
import socket
import threading
import time
import traceback
from multiprocessing import AuthenticationError
from multiprocessing.connection import Connection, answer_challenge, deliver_challenge
from typing import Any, Iterator

from trainstack.dataflow.codec import decode_frame, encode_frame
from trainstack.dataflow.protocol import dataflow_len_or_none, reset_dataflow

from .errors import EmptyDataFlowError, FrameError, InputError, InputWorkerError
from .queue import QueueInput

__all__ = ["serve_dataflow", "DataFlowServer", "RemoteDataFlow", "RemoteInput", "DEFAULT_MAX_FRAME_BYTES",
           "DEFAULT_HANDSHAKE_TIMEOUT", "DEFAULT_MAX_HANDSHAKES"]

logger = logging.getLogger("trainstack.inputs")

#: The largest frame (one encoded datapoint) sent or accepted by default: 256 MiB.
DEFAULT_MAX_FRAME_BYTES = 256 * 2**20
#: Seconds a connecting peer has to complete the authentication handshake by default.
DEFAULT_HANDSHAKE_TIMEOUT = 10.0
#: How many handshakes a server runs at once by default (each in a thread).
DEFAULT_MAX_HANDSHAKES = 32
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


def _check_max_frame_bytes(n: Any) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"max_frame_bytes must be a positive int, got {n!r}")
    return n


def _check_positive(name: str, value: Any, kind: type = float) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, kind)) or not value > 0:
        raise ValueError(f"{name} must be a positive {kind.__name__}, got {value!r}")
    return value


def _peer(address: tuple[str, int] | None) -> str:
    return "an unknown address" if address is None else f"{address[0]}:{address[1]}"


class _ClientGone(Exception):
    """Sending failed: the client disconnected."""


class DataFlowServer:
    """Listens on ``address`` (``(host, port)`` or ``'host:port'``; port 0 picks a free one,
    see :attr:`address`) and serves ``dataflow`` to clients that know ``authkey``.

    A connecting peer has ``handshake_timeout`` seconds to authenticate; at
    most ``max_handshakes`` handshakes run at once (see the module docstring).
    """

    def __init__(self, dataflow: Any, address: Any, authkey: bytes | str, *,
                 max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
                 handshake_timeout: float = DEFAULT_HANDSHAKE_TIMEOUT,
                 max_handshakes: int = DEFAULT_MAX_HANDSHAKES) -> None:
        self.dataflow = dataflow
        self.max_frame_bytes = _check_max_frame_bytes(max_frame_bytes)
        self.handshake_timeout = _check_positive("handshake_timeout", handshake_timeout)
        self.max_handshakes = _check_positive("max_handshakes", max_handshakes, int)
        self._authkey = _check_authkey(authkey)
        self._socket = socket.create_server(_parse_address(address), backlog=16)
        self._socket.settimeout(_POLL_S)  # the accepting thread checks self._closed between waits
        self._closed = False
        self._lock = threading.Lock()
        self._ready: queue.Queue[tuple[Connection, str] | None] = queue.Queue()  # authenticated
        self._handshake_slots = threading.BoundedSemaphore(self.max_handshakes)
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
        Peers that fail or stall their handshake are logged and dropped
        without holding up the others.
        """
        if self._closed:
            raise OSError("the DataFlowServer was closed")
        reset_dataflow(self.dataflow)
        logger.info("serving %s on %s", type(self.dataflow).__name__, _peer(self.address))
        served = 0
        while max_clients is None or served < max_clients:
            item = self._ready.get()
            if item is None:  # closed
                self._ready.put(None)  # for another serve() waiting, if any
                return
            conn, peer = item
            served += 1
            with conn:
                self._stream(conn, peer)

    def close(self) -> None:
        """Stop listening; drop the connections waiting to be served and wake :meth:`serve`."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._acceptor.join()  # it closes the socket (closing it under its accept() would race)
        while True:
            try:
                item = self._ready.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                item[0].close()
        self._ready.put(None)

    def __enter__(self) -> DataFlowServer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _accept_loop(self) -> None:
        try:
            while not self._closed:
                try:
                    sock, address = self._socket.accept()
                except TimeoutError:
                    continue
                except OSError as e:  # e.g. out of file descriptors: wait rather than spin
                    logger.warning("accepting a connection failed: %s: %s", type(e).__name__, e)
                    time.sleep(_POLL_S)
                    continue
                peer = _peer(address)
                if self._closed:
                    sock.close()
                elif not self._handshake_slots.acquire(blocking=False):
                    logger.warning("dropped a connection from %s: %d handshakes are already running "
                                   "(max_handshakes)", peer, self.max_handshakes)
                    sock.close()
                else:
                    threading.Thread(target=self._handshake, args=(sock, peer), daemon=True,
                                     name=f"DataFlowServer handshake {peer}").start()
        finally:
            self._socket.close()

    def _handshake(self, sock: socket.socket, peer: str) -> None:
        """Authenticate ``peer`` within handshake_timeout; queue it for serve(), or drop it."""
        try:
            conn = _authenticate(sock, self._authkey, self.handshake_timeout, server=True)
        except AuthenticationError as e:
            logger.warning("refused a connection from %s: it failed authentication (%s); its authkey "
                           "differs from this server's", peer, e)
        except TimeoutError:
            logger.warning("dropped a connection from %s: it did not complete the handshake within "
                           "handshake_timeout=%s s", peer, self.handshake_timeout)
        except Exception as e:  # noqa: BLE001 - OSError, EOFError, ...: whatever the peer did, drop it
            logger.warning("dropped a connection from %s during the handshake: %s: %s",
                           peer, type(e).__name__, e)
        else:
            with self._lock:  # close() drains the queue after setting _closed under this lock
                if not self._closed:
                    self._ready.put((conn, peer))
                    return
            conn.close()
        finally:
            self._handshake_slots.release()

    def _stream(self, conn: Connection, peer: str) -> None:
        logger.info("serving a client at %s", peer)
        try:
            self._send(conn, encode_frame("hello", size=_len_or_none(self.dataflow)))
            for pass_num in itertools.count():
                empty = True
                for datapoint in self.dataflow:
                    empty = False
                    self._send(conn, encode_frame("data", pass_num=pass_num, datapoint=datapoint))
                if empty:
                    raise EmptyDataFlowError(f"the served dataflow {type(self.dataflow).__name__} "
                                             "yielded no datapoint in a whole pass")
                self._send(conn, encode_frame("end_of_pass", pass_num=pass_num))
        except _ClientGone:
            logger.info("the client at %s disconnected", peer)
        except BaseException as e:
            logger.error("serving %s failed: %s: %s", peer, type(e).__name__, e)
            try:
                # not held to max_frame_bytes: the client must learn why, and tracebacks are small
                self._send(conn, encode_frame("error", message=traceback.format_exc()), limit=False)
            except _ClientGone:
                pass
            raise

    def _send(self, conn: Connection, frame: bytes, limit: bool = True) -> None:
        if limit and len(frame) > self.max_frame_bytes:
            raise FrameError(f"a datapoint encodes to {len(frame)} bytes, more than max_frame_bytes="
                             f"{self.max_frame_bytes}; raise it on the server and the client")
        try:
            conn.send_bytes(frame)
        except OSError as e:  # BrokenPipeError, ConnectionResetError
            raise _ClientGone() from e


def _authenticate(sock: socket.socket, authkey: bytes, timeout: float, *, server: bool) -> Connection:
    """multiprocessing's HMAC handshake over ``sock`` (the server challenges first), given
    ``timeout`` seconds in all; the authenticated connection. Closes ``sock`` either way.

    Raises AuthenticationError (a wrong key), TimeoutError, or what reading and
    writing raise (OSError, EOFError: the peer left or sent what is not a message).
    """
    state = {"done": False, "timed_out": False}
    lock = threading.Lock()

    def time_out() -> None:
        with lock:
            if not state["done"]:
                state["timed_out"] = True
                try:  # wakes the handshake's blocked read or write with EOF or an error
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    timer = threading.Timer(timeout, time_out)
    timer.daemon = True
    try:
        sock.setblocking(True)
        conn = Connection(os.dup(sock.fileno()))  # ``sock`` stays open meanwhile, for time_out
        try:
            timer.start()
            if server:
                deliver_challenge(conn, authkey)
                answer_challenge(conn, authkey)
            else:
                answer_challenge(conn, authkey)
                deliver_challenge(conn, authkey)
            with lock:
                state["done"] = True
        except BaseException:
            conn.close()
            if state["timed_out"]:
                raise TimeoutError(f"no complete handshake within {timeout} s") from None
            raise
        return conn
    finally:
        timer.cancel()
        sock.close()


def _len_or_none(dataflow: Any) -> int | None:
    return dataflow_len_or_none(dataflow)


def serve_dataflow(dataflow: Any, address: Any, authkey: bytes | str, *,
                   max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES, max_clients: int | None = None,
                   handshake_timeout: float = DEFAULT_HANDSHAKE_TIMEOUT,
                   max_handshakes: int = DEFAULT_MAX_HANDSHAKES) -> None:
    """Serve pass after pass of ``dataflow`` on ``address`` to clients with ``authkey``; blocks.

    Clients are served one at a time (:class:`RemoteInput` or
    :class:`RemoteDataFlow` on the training host); returns after ``max_clients``
    clients (None: serves forever). See :class:`DataFlowServer` for the rest.
    """
    with DataFlowServer(dataflow, address, authkey, max_frame_bytes=max_frame_bytes,
                        handshake_timeout=handshake_timeout, max_handshakes=max_handshakes) as server:
        server.serve(max_clients)


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
    """

    def __init__(self, address: Any, authkey: bytes | str, *, size: int | None = None,
                 max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES, timeout: float | None = None) -> None:
        if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size < 1):
            raise ValueError(f"size must be a positive int (datapoints per pass) or None, got {size!r}")
        if timeout is not None and not timeout > 0:
            raise ValueError(f"timeout must be positive seconds or None, got {timeout!r}")
        self.address = _parse_address(address)
        self._authkey = _check_authkey(authkey)
        self.size = size
        self.max_frame_bytes = _check_max_frame_bytes(max_frame_bytes)
        self.timeout = timeout
        self._conn: Connection | None = None
        self._closing = False
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

    def reset_state(self) -> None:
        """(Re)connect; the next iteration is the server's first pass."""
        self.close()
        peer = _peer(self.address)
        handshake_timeout = DEFAULT_HANDSHAKE_TIMEOUT if self.timeout is None else self.timeout
        try:
            sock = socket.create_connection(self.address, timeout=handshake_timeout)
        except OSError as e:
            raise InputError(f"{self.name}: cannot connect to {peer} ({type(e).__name__}: {e}); "
                             "is serve_dataflow running there?") from e
        try:
            conn = _authenticate(sock, self._authkey, handshake_timeout, server=False)
        except AuthenticationError as e:
            raise InputError(f"{self.name}: authentication with the server at {peer} failed ({e}): "
                             "this authkey is not the server's") from e
        except TimeoutError as e:
            raise InputError(f"{self.name}: the server at {peer} did not complete the authentication "
                             f"handshake within {handshake_timeout} s; is it a DataFlowServer?") from e
        except (OSError, EOFError) as e:
            raise InputError(f"{self.name}: the server at {peer} dropped the connection during the "
                             f"authentication handshake ({type(e).__name__}: {e})") from e
        self._conn, self._closing, self._failed = conn, False, None
        self._next_pass = self._frame_pass = 0
        try:
            hello = self._receive()
            if hello["kind"] != "hello":
                raise FrameError(f"{self.name}: the server at {peer} sent a {hello['kind']!r} frame "
                                 "before its 'hello'")
            if None not in (hello["size"], self.size) and hello["size"] != self.size:
                raise InputError(f"{self.name}: size={self.size}, but a pass of the server at {peer} "
                                 f"has {hello['size']} datapoints; epochs would not be passes")
        except BaseException:
            self.close()  # a connection that cannot be used is not kept open
            raise

    def close(self) -> None:
        """Disconnect (the server then serves its next client)."""
        self._closing = True
        conn, self._conn = self._conn, None
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
            self.reset_state()
        pass_num, self._next_pass = self._next_pass, self._next_pass + 1
        try:
            while self._frame_pass <= pass_num:
                frame = self._receive()
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
            if not self._closing or isinstance(e, FrameError):  # not a close() by the caller
                self._failed = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            self.close()
            raise

    def _receive(self) -> dict[str, Any]:
        """The next frame (an 'error' frame is raised as InputWorkerError)."""
        peer = _peer(self.address)
        conn = self._conn
        try:
            if conn is None:
                raise OSError("not connected")
            deadline = None if self.timeout is None else time.monotonic() + self.timeout
            while not conn.poll(_POLL_S):
                if self._closing:
                    raise OSError("closed")
                if deadline is not None and time.monotonic() >= deadline:
                    raise InputWorkerError(f"{self.name}: no frame from the server at {peer} for "
                                           f"{self.timeout} s (timeout)")
            data = conn.recv_bytes(self.max_frame_bytes)
        except EOFError:
            raise InputWorkerError(f"{self.name}: the server at {peer} closed the connection") from None
        except OSError as e:
            if self._closing:
                raise InputError(f"{self.name} was closed while it was being read") from None
            if conn is not None and not conn.readable:  # recv_bytes refused an oversized frame
                self.close()
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

    def stop(self, timeout: float = 10.0) -> None:
        """Disconnect, then stop the thread (which disconnecting wakes)."""
        self._stop.set()  # from now on the thread's errors are not errors of training
        self.dataflow.close()
        super().stop(timeout)
        self.dataflow.close()  # in case the thread was still starting up: it made a new connection
