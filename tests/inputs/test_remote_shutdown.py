"""Shutting the remote input down, and the peers that must not hold it up.

The server: a client that authenticates and then stops reading is dropped after
``send_timeout`` (the next client is served) and does not delay close(); a burst
of silent peers does not delay a client; each kind of failed handshake is logged
as what it is. The client: a close() racing with reset_state() wins, and a
RemoteInput's stop() racing with its thread's connecting too. After each, no
thread of the server or client is left running and no socket open.

Every wait is bounded: a hang fails its test instead of stalling the run.
"""
from __future__ import annotations

import contextlib
import logging
import os
import random
import socket
import sys
import threading
import time
from multiprocessing import AuthenticationError
from multiprocessing.connection import Client, Connection, answer_challenge, deliver_challenge

import numpy as np
import pytest
import tensorflow as tf

from trainstack.inputs import DataFlowServer, InputError, RemoteDataFlow, RemoteInput

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)
from test_remote import KEY, hello  # noqa: E402
from test_remote_fuzz import N, Server, dropped_by_server, good_client, message, raw_connection  # noqa: E402

SIGNATURE = [tf.TensorSpec([], tf.int64, name="id"), tf.TensorSpec([2, 2], tf.float32, name="image")]


class BigFlow:
    """Endless datapoints ``[id, nbytes of float32]``: a client that reads none of them fills the
    sockets' buffers (a few MiB) in a few frames. ``first`` is set as the first one is yielded."""

    def __init__(self, nbytes: int) -> None:
        self.nbytes = nbytes
        self.first = threading.Event()

    def __iter__(self):
        for i in range(10**9):
            self.first.set()
            yield [np.array(i, np.int64), np.full(self.nbytes // 4, i, np.float32)]


class LogWatch(logging.Handler):
    """Records of the ``trainstack.inputs`` logger, and a wait for one that says something."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []
        self.changed = threading.Condition()

    def emit(self, record: logging.LogRecord) -> None:
        with self.changed:
            self.messages.append(record.getMessage())
            self.changed.notify_all()

    def wait_for(self, text: str, seconds: float = 10.0) -> str:
        """The first message containing ``text``, waited for up to ``seconds``."""
        def found():
            return next((m for m in self.messages if text in m), None)

        with self.changed:
            assert self.changed.wait_for(found, seconds), f"no log message says {text!r}: {self.messages}"
            return found()


@contextlib.contextmanager
def watching_logs(caplog):
    """A :class:`LogWatch` on the root logger while in the ``with``, the inputs' logger at DEBUG.
    Entered in a test's body, it comes after ``caplog``'s handler: what it saw, caplog has."""
    watch = LogWatch()
    root = logging.getLogger()
    root.addHandler(watch)
    try:
        with caplog.at_level(logging.DEBUG, logger="trainstack.inputs"):
            yield watch
    finally:
        root.removeHandler(watch)


@pytest.fixture
def logs(caplog):
    """:func:`watching_logs` for a whole test."""
    with watching_logs(caplog) as watch:
        yield watch


def open_sockets() -> set[str] | None:
    """This process's open sockets (``socket:[inode]``), or None where /proc cannot tell."""
    try:
        fds = os.listdir("/proc/self/fd")
    except OSError:
        return None
    found = set()
    for fd in fds:
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # closed meanwhile (the listing's own descriptor)
            continue
        if target.startswith("socket:"):
            found.add(target)
    return found


@pytest.fixture
def no_leaks():
    """Fails the test if it leaves a thread running or a socket open that it did not find."""
    threads, sockets = set(threading.enumerate()), open_sockets()
    yield
    left = [t.name for t in threading.enumerate() if t not in threads]
    assert not left, f"threads left running: {left}"
    if sockets is not None:
        assert open_sockets() <= sockets, f"sockets left open: {open_sockets() - sockets}"


def serve_in_thread(server: DataFlowServer) -> threading.Thread:
    thread = threading.Thread(target=server.serve, daemon=True, name="test serve()")
    thread.start()
    return thread


def stalled_client(address) -> Client:
    """A client that authenticates (multiprocessing's own Client) and then reads nothing."""
    return Client(address, authkey=KEY)


def dropped(conn) -> bool:
    """:func:`dropped_by_server` for a multiprocessing Connection (read through a duplicate socket)."""
    with socket.socket(fileno=os.dup(conn.fileno())) as sock:
        return dropped_by_server(sock)


# -- the server: a client that stops reading ------------------------------------------------------

def test_a_client_that_stops_reading_is_dropped_and_the_next_served(no_leaks, logs, run_with_deadline):
    flow = BigFlow(2**20)
    server = DataFlowServer(flow, ("127.0.0.1", 0), KEY, send_timeout=1)
    thread = serve_in_thread(server)
    try:
        with stalled_client(server.address):
            flow.first.wait(10)  # it is being served (and will fill its buffers at once)

            def read_two():
                with RemoteDataFlow(server.address, KEY, timeout=20) as client:
                    return [int(dp[0]) for _, dp in zip(range(2), client)]

            assert run_with_deadline(read_two, 30) == [0, 1]  # the next client, from the first datapoint
            assert "it read nothing for send_timeout=1 s" in logs.wait_for("dropped the client at 127.0.0.1")
    finally:
        server.close()
        thread.join(10)
    assert not thread.is_alive()


def test_close_is_prompt_while_a_client_stops_reading(no_leaks, logs, run_with_deadline):
    flow = BigFlow(32 * 2**20)  # a frame no socket buffer holds: the server's send blocks on it
    server = DataFlowServer(flow, ("127.0.0.1", 0), KEY)  # the default send_timeout: minutes
    thread = serve_in_thread(server)
    with stalled_client(server.address) as stalled:
        waiting = Client(server.address, authkey=KEY)  # authenticated, waiting for its turn
        with waiting, raw_connection(server.address) as silent:  # and a handshake running
            assert silent.recv(1, socket.MSG_PEEK)  # the server's challenge: its handshake runs
            assert flow.first.wait(10)  # the server is sending the stalled client its first datapoint
            # close() returns and the serving thread ends with the stalled client still not
            # reading: they do not wait for its send_timeout (300 s; the 60 s are a hang guard)
            run_with_deadline(server.close, 60)
            thread.join(60)
            assert not thread.is_alive()
            # every connection was closed by the server: each peer reads to its end
            assert dropped_by_server(silent) and dropped(waiting)
        assert dropped(stalled)
    logs.wait_for("stopped serving the client at 127.0.0.1")  # stopped, not 'disconnected'
    assert not [t for t in threading.enumerate() if t.name.startswith("DataFlowServer")]


# -- the server: handshakes -----------------------------------------------------------------------

def test_a_burst_of_silent_peers_does_not_delay_a_client(no_leaks, logs, run_with_deadline):
    server = Server()  # the defaults: max_handshakes=32, handshake_timeout=5
    silent = [raw_connection(server.address) for _ in range(32)]
    try:
        for s in silent:  # until all 32 handshakes run: the server sent each its challenge
            assert s.recv(1, socket.MSG_PEEK)

        def first_datapoint():
            with RemoteDataFlow(server.address, KEY, size=N) as client:
                return int(next(iter(client))[0])

        # the client is served because the oldest silent handshake made room for it, not because
        # one timed out (handshake_timeout=5 s): the server says so (the 60 s are a hang guard)
        assert run_with_deadline(first_datapoint, 60) == 0
        logs.wait_for("it was the oldest of max_handshakes=32 handshakes running")
        server.assert_serving()
    finally:
        for s in silent:
            s.close()
        server.stop()


def send_random_bytes(address) -> None:
    with raw_connection(address) as sock:
        sock.sendall(random.Random(0).randbytes(64))  # its first 4 bytes are read as a length: then no digest
        with contextlib.suppress(OSError):  # the server may have refused the length and closed already
            sock.shutdown(socket.SHUT_WR)
        assert dropped_by_server(sock)


def send_a_random_message(address) -> None:
    with raw_connection(address) as sock:  # a well-framed message, but no digest of any key
        sock.sendall(message(random.Random(1).randbytes(64)))
        assert dropped_by_server(sock)


def use_a_wrong_key(address) -> None:
    with pytest.raises(AuthenticationError):
        Client(address, authkey=b"not the key")


def stay_silent(address) -> None:
    with raw_connection(address) as sock:
        assert dropped_by_server(sock, within=15)


@pytest.mark.parametrize("peer, logged, not_logged", [
    (send_random_bytes, "sent a malformed handshake frame (", "differs"),
    (send_a_random_message, "sent a malformed handshake frame (AuthenticationError", "differs"),
    (use_a_wrong_key, "failed authentication (AuthenticationError: digest received was wrong); its authkey "
                      "differs from this server's", "malformed"),
    (stay_silent, "did not complete the handshake within handshake_timeout=0.5 s", "malformed"),
], ids=["random bytes", "random message", "wrong key", "silent"])
def test_each_failed_handshake_is_logged_as_what_it_is(caplog, run_with_deadline, peer, logged, not_logged):
    server = Server(handshake_timeout=0.5)
    try:
        with watching_logs(caplog) as logs:
            peer(server.address)
            line = logs.wait_for("connection from 127.0.0.1")
        assert logged in line and not_logged not in line, line
        assert logged in caplog.text
        assert [r.levelname for r in caplog.records if "connection from" in r.getMessage()] == ["WARNING"]
        good_client(server.address, run_with_deadline)
    finally:
        server.stop()


def test_a_client_with_a_wrong_key_is_told_so(logs):
    server = Server()
    try:
        with pytest.raises(InputError, match="authentication with the server at .* this authkey is not the "
                                             "server's"):
            RemoteDataFlow(server.address, b"not the key").reset_state()
        assert "authkey differs" in logs.wait_for("refused a connection")
    finally:
        server.stop()


# -- the client: close() racing with reset_state() ------------------------------------------------

def test_close_during_the_handshake_wins(no_leaks, run_with_deadline):
    with socket.create_server(("127.0.0.1", 0)) as listener:  # a server that answers only when told
        listener.settimeout(10)
        flow = RemoteDataFlow(listener.getsockname(), KEY, timeout=60)
        errors: list[BaseException] = []

        def connect():
            try:
                flow.reset_state()
            except BaseException as e:  # noqa: BLE001 - the test inspects it
                errors.append(e)

        thread = threading.Thread(target=connect)
        thread.start()
        accepted, _ = listener.accept()  # the client connected: its handshake runs (or is about to)
        with accepted:
            flow.close()

            def answer():  # the server's side of the handshake, and its 'hello', after the close()
                with Connection(os.dup(accepted.fileno())) as conn:
                    deliver_challenge(conn, KEY)
                    answer_challenge(conn, KEY)
                    conn.send_bytes(hello())

            with pytest.raises((EOFError, OSError)):  # the client is gone: it does not answer
                run_with_deadline(answer, 10)
            thread.join(5)
            assert not thread.is_alive(), "reset_state() went on after close()"
            assert len(errors) == 1 and isinstance(errors[0], InputError), errors
            assert "was closed while it was connecting" in str(errors[0])
            accepted.settimeout(5)
            assert accepted.recv(1) == b""  # the client's socket is closed, not just left
        with pytest.raises(InputError, match=r"was closed; call reset_state\(\)"):
            next(iter(flow))  # and it does not connect again of itself
        assert flow._sock is flow._conn is flow._handshake is None


class WatchedFlow(RemoteDataFlow):
    """A RemoteDataFlow that sets ``connecting`` when reset_state() starts making its connection."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.connecting = threading.Event()

    def _open(self, stop):
        self.connecting.set()
        return super()._open(stop)


def test_close_racing_with_reset_state_always_wins(no_leaks, run_with_deadline):
    server = Server()
    try:
        outcomes = set()
        for attempt in range(40):
            flow = WatchedFlow(server.address, KEY, size=N, timeout=10)
            errors: list[BaseException] = []

            def connect():
                try:
                    flow.reset_state()
                except InputError as e:
                    errors.append(e)

            thread = threading.Thread(target=connect)
            thread.start()
            assert flow.connecting.wait(5)
            time.sleep(attempt * 0.0002)  # not a wait: it moves the close() along the reset_state()
            flow.close()
            thread.join(5)
            assert not thread.is_alive()
            assert all("was closed while it was" in str(e) for e in errors), errors
            outcomes.add("close won while connecting" if errors else "close came after")
            with pytest.raises(InputError, match="was closed"):
                next(iter(flow))  # nothing connects again of itself...
            assert flow._sock is flow._conn is flow._handshake is None  # ...and nothing was left open
        # no connection was left behind: had one been, the server would still be serving it
        good_client(server.address, run_with_deadline)
        assert "close won while connecting" in outcomes  # the race was run, not just the easy case
    finally:
        server.stop()


def test_remote_input_stop_racing_with_its_thread_connecting(no_leaks, run_with_deadline):
    server = Server()
    try:
        for attempt in range(20):
            source = RemoteInput(server.address, KEY, size=N, queue_size=2)  # a source serves one run
            source.setup(SIGNATURE)
            source.reset_state()  # its thread starts connecting
            thread = source._thread
            time.sleep(attempt * 0.0005)  # not a wait: it moves the stop() along the connecting
            source.stop()
            assert not thread.is_alive(), "stop() returned with the thread running"
            assert source.error is None  # being stopped is not an error of training
            flow = source.dataflow
            assert flow._conn is None and flow._sock is None and flow._handshake is None
        good_client(server.address, run_with_deadline)  # no connection of the sources was left behind
    finally:
        server.stop()
