"""The remote input's server: :func:`serve_dataflow` / :class:`DataFlowServer`.

It runs next to the data and sends pass after pass of a dataflow as msgpack
frames (:mod:`trainstack.dataflow.codec`) to one client at a time, until the
client disconnects, then serves the next; each client starts at the
dataflow's first pass. The first frame tells the client the size of a pass
(when the dataflow has a ``__len__``), which must agree with the client's
``size``.

Handshakes (:mod:`.remote_handshake`) run in threads of their own, apart from
the thread that serves data, each given ``handshake_timeout`` seconds, so a
peer that connects and then sends nothing, or garbage, or half a message,
holds up neither the client being served nor the others: it is dropped when
its handshake fails or times out, and logged with the reason. At most
``max_handshakes`` run at once; a connection beyond them ends the oldest
running handshake, so that a burst of silent peers cannot lock out a client
that answers at once.

A client that stops reading is dropped (and logged) once a frame has made no
progress for ``send_timeout`` seconds; the server goes on with the next. One
stop event, set by :meth:`DataFlowServer.close`, ends every thread of the
server: close() joins them and closes every socket, and wakes a send blocked
on a client at once.
"""
from __future__ import annotations

import itertools
import logging
import queue
import socket
import struct
import threading
import time
import traceback
from typing import Any

from trainstack.dataflow.codec import encode_frame
from trainstack.dataflow.protocol import dataflow_len_or_none, reset_dataflow
from trainstack.loop.checks import check_int, check_number

from .errors import EmptyDataFlowError, FrameError
from .remote_handshake import (
    CLOSED,
    DEFAULT_HANDSHAKE_TIMEOUT,
    DEFAULT_MAX_FRAME_BYTES,
    EVICTED,
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

__all__ = ["serve_dataflow", "DataFlowServer", "DEFAULT_MAX_HANDSHAKES", "DEFAULT_SEND_TIMEOUT"]

logger = logging.getLogger("trainstack.inputs")

#: How many handshakes a server runs at once by default (each in a thread).
DEFAULT_MAX_HANDSHAKES = 32
#: Seconds a frame may make no progress (its client reads nothing) before the server drops that
#: client by default; long, because a trainer pauses reading while its callbacks run (evaluation).
DEFAULT_SEND_TIMEOUT = 300.0


class _ClientGone(Exception):
    """Sending to the client being served ended: ``why`` is "disconnected", "stalled" (nothing
    sent for send_timeout seconds) or "closed" (the server was closed)."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why




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
        self._authkey = check_authkey(authkey)
        # a deep backlog: a burst of peers must not make the kernel drop a client's SYN (1 s to retry)
        self._socket = socket.create_server(parse_address(address), backlog=128)
        self._socket.settimeout(POLL_S)  # the accepting thread checks the stop event between waits
        self._stop = threading.Event()  # set by close(); every thread and socket of the server obeys it
        self._lock = threading.Lock()  # guards what close() takes over: the fields below
        self._ready: queue.Queue[tuple[socket.socket, str] | None] = queue.Queue()  # authenticated
        self._handshakes: dict[Handshake, None] = {}  # running, oldest first
        self._threads: list[threading.Thread] = []  # the handshakes' threads, for close() to join
        self._serving: socket.socket | None = None  # the client being served
        self._serve_threads: set[int] = set()  # the threads running serve()
        self._served_all = threading.Condition(self._lock)  # notified when a serve() returns
        # handshakes start now, so that clients connecting before serve() wait for their 'hello'
        self._acceptor = threading.Thread(target=self._accept_loop, daemon=True,
                                          name=f"DataFlowServer accept {peer_name(self.address)}")
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
        logger.info("serving %s on %s", type(self.dataflow).__name__, peer_name(self.address))
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
            handshake.abort(CLOSED)
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
                    self._stop.wait(POLL_S)
                    continue
                self._start_handshake(sock, peer_name(address))
        finally:
            self._socket.close()

    def _expire_handshakes(self) -> None:
        """Abort the handshakes past their deadline (checked every POLL_S at least)."""
        now = time.monotonic()
        with self._lock:
            expired = [h for h in self._handshakes if h.deadline <= now]
        for handshake in expired:
            handshake.abort(TIMEOUT)

    def _start_handshake(self, sock: socket.socket, peer: str) -> None:
        """Run ``sock``'s handshake in a thread; at max_handshakes, the oldest running one ends
        (evicted) to make room: a legitimate client completes its own in milliseconds."""
        handshake = Handshake(sock, peer, self.handshake_timeout)
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
            evicted.abort(EVICTED)
        thread.start()

    def _handshake(self, handshake: Handshake) -> None:
        """Authenticate a peer; queue it for serve(), or log why it failed and drop it."""
        queued = False
        try:
            handshake.run(self._authkey, server=True).close()  # serve() sends on the socket itself
            with self._lock:  # close() drains the queue after setting the stop event under this lock
                if not self._stop.is_set():
                    self._ready.put((handshake.sock, handshake.peer))
                    queued = True
        except HandshakeFailed as e:
            self._log_failed_handshake(handshake, e)
        finally:
            with self._lock:
                self._handshakes.pop(handshake, None)
            if not queued:
                handshake.sock.close()

    def _log_failed_handshake(self, handshake: Handshake, e: HandshakeFailed) -> None:
        peer = handshake.peer
        if e.kind == WRONG_KEY:
            logger.warning("refused a connection from %s: it failed authentication (%s); its authkey "
                           "differs from this server's", peer, e)
        elif e.kind == MALFORMED:
            logger.warning("dropped a connection from %s: it sent a malformed handshake frame (%s); it "
                           "does not speak the authentication handshake of a RemoteDataFlow", peer, e)
        elif e.kind == TIMEOUT:
            logger.warning("dropped a connection from %s: it did not complete the handshake within "
                           "handshake_timeout=%s s", peer, self.handshake_timeout)
        elif e.kind == EVICTED:
            logger.warning("dropped a connection from %s: it was the oldest of max_handshakes=%d handshakes "
                           "running (for %.1f s) when another peer connected", peer, self.max_handshakes,
                           time.monotonic() - handshake.started)
        elif e.kind == CLOSED:
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
