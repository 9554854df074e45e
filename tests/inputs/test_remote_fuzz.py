"""Fuzzing the remote input: bad peers of a DataFlowServer (garbage, a wrong key, truncated and
oversized messages, silence, random bytes) are logged and dropped, and the server keeps serving
good clients, even while a silent peer stays connected; a RemoteDataFlow fed random frames by a
rogue server raises the input errors, never anything else, and never hangs.

Every wait is bounded: a hang fails its test instead of stalling the run.
"""
from __future__ import annotations

import logging
import os
import socket
import struct
import sys
import threading
import time
from multiprocessing import AuthenticationError
from multiprocessing.connection import Client

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trainstack.inputs import DataFlowServer, FrameError, InputError, RemoteDataFlow
from trainstack.inputs.codec import encode_frame

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)
import mp_dataflows  # noqa: E402
from test_remote import KEY, data, hello, rogue_server  # noqa: E402

N = 5  # datapoints per pass of the served dataflow
FUZZ = settings(max_examples=30, deadline=None, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


class Server:
    """A DataFlowServer serving clients forever in a thread, until :meth:`stop`."""

    def __init__(self, **kwargs) -> None:
        self.server = DataFlowServer(mp_dataflows.IdFlow(N), ("127.0.0.1", 0), KEY, **kwargs)
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    @property
    def address(self):
        return self.server.address

    def _run(self) -> None:
        try:
            self.server.serve()
        except BaseException as e:  # noqa: BLE001 - the test inspects it
            self.error = e

    def assert_serving(self) -> None:
        assert self.thread.is_alive() and self.error is None, f"the server stopped: {self.error!r}"

    def stop(self) -> None:
        self.server.close()
        self.thread.join(10)
        assert not self.thread.is_alive(), "serve() did not return after close()"
        assert self.error is None


@pytest.fixture
def server():
    s = Server()
    yield s
    s.stop()


def good_client(address, run_with_deadline, passes: int = 2) -> None:
    """A RemoteDataFlow with the key receives ``passes`` whole passes, in order, within 30 s."""
    def read():
        with RemoteDataFlow(address, KEY, size=N, timeout=10) as flow:
            return [[(int(dp[0]), dp[1].tolist()) for dp in flow] for _ in range(passes)]

    expected = [(i, [[float(i)] * 2] * 2) for i in range(N)]
    assert run_with_deadline(read, 30) == [expected] * passes


def raw_connection(address) -> socket.socket:
    return socket.create_connection(address, timeout=10)


def dropped_by_server(sock: socket.socket, within: float = 10.0) -> bool:
    """Whether the server closes ``sock`` (EOF or reset) within ``within`` seconds; what it
    sends before (its challenge) is read and ignored."""
    sock.settimeout(within)
    try:
        while sock.recv(4096):
            pass
    except TimeoutError:
        return False
    except OSError:  # reset
        pass
    return True


def send_and_close(address, payload: bytes) -> None:
    with raw_connection(address) as sock:
        try:
            sock.sendall(payload)
        except OSError:
            pass


def wait_for_log(caplog, text: str, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while text not in caplog.text and time.monotonic() < deadline:
        time.sleep(0.02)
    assert text in caplog.text, caplog.text


# multiprocessing.connection's messages: a 4-byte big-endian signed length, then the bytes
def message(payload: bytes) -> bytes:
    return struct.pack("!i", len(payload)) + payload


@pytest.mark.parametrize("payload, logged", [
    (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "bad message length"),  # 'GET ' read as a length
    (b"\x00\x00\x00\x10" + b"abc", "end of file during message"),  # a truncated message, then the peer leaves
    (message(b"#WRONG#" + b"\0" * 20), "malformed handshake frame"),  # no digest: not a wrong key
    (message(b"x" * 300), "bad message length"),  # longer than a handshake message may be
    (b"\x00\x00", "end of file during message"),  # half a length
    (b"", "EOFError"),  # connects and leaves
], ids=["http request", "truncated message", "bad response", "long message", "half a length", "nothing"])
def test_bad_peers_are_logged_and_dropped(server, run_with_deadline, caplog, payload, logged):
    with caplog.at_level(logging.WARNING, logger="trainstack.inputs"):
        with raw_connection(server.address) as sock:
            try:
                sock.sendall(payload)
                sock.shutdown(socket.SHUT_WR)
            except OSError:  # the server already dropped it, on its first bytes
                pass
            assert dropped_by_server(sock)
        wait_for_log(caplog, logged)
    assert "dropped a connection from 127.0.0.1" in caplog.text or "refused" in caplog.text
    server.assert_serving()
    good_client(server.address, run_with_deadline)


def test_a_wrong_key_is_refused_and_the_server_goes_on(server, run_with_deadline, caplog):
    with caplog.at_level(logging.WARNING, logger="trainstack.inputs"):
        with pytest.raises(AuthenticationError):
            Client(server.address, authkey=b"not the key")
        wait_for_log(caplog, "failed authentication")
    good_client(server.address, run_with_deadline)


def test_an_oversized_length_then_silence_is_dropped(server, run_with_deadline, caplog):
    with caplog.at_level(logging.WARNING, logger="trainstack.inputs"):
        # claims 2**31 - 1 bytes, then 2**31 (the 8-byte form), and stays connected
        for header in (struct.pack("!i", 2**31 - 1), struct.pack("!iQ", -1, 2**31)):
            with raw_connection(server.address) as sock:
                sock.sendall(header)
                assert dropped_by_server(sock)  # at once, without reading (or allocating) that much
        wait_for_log(caplog, "bad message length")
    good_client(server.address, run_with_deadline)


def test_a_silent_peer_holds_up_no_one(server, run_with_deadline):
    with raw_connection(server.address) as silent:
        # connected, saying nothing (its handshake has 5 s): good clients are served meanwhile
        good_client(server.address, run_with_deadline)
        good_client(server.address, run_with_deadline, passes=1)
        assert not dropped_by_server(silent, within=0.5)  # it was still connected all along
    server.assert_serving()


@pytest.mark.parametrize("sent", [b"", b"\x00\x00\x00\x40" + b"x" * 10],
                         ids=["silent", "stalls after 10 of the 64 bytes it announced"])
def test_a_peer_that_stalls_is_dropped_after_the_handshake_timeout(run_with_deadline, caplog, sent):
    server = Server(handshake_timeout=1)
    try:
        with caplog.at_level(logging.WARNING, logger="trainstack.inputs"):
            with raw_connection(server.address) as stalled:
                stalled.sendall(sent)
                assert dropped_by_server(stalled, within=15)
            wait_for_log(caplog, "did not complete the handshake within handshake_timeout=1 s")
        good_client(server.address, run_with_deadline)
    finally:
        server.stop()


def test_a_connection_beyond_max_handshakes_ends_the_oldest_handshake(run_with_deadline, caplog):
    server = Server(max_handshakes=2, handshake_timeout=30)  # only an eviction drops a silent peer here
    try:
        with caplog.at_level(logging.WARNING, logger="trainstack.inputs"):
            first, second = raw_connection(server.address), raw_connection(server.address)
            with first, second:
                for s in (first, second):  # until their handshakes run (the server sent its challenge)
                    assert s.recv(1, socket.MSG_PEEK)
                with raw_connection(server.address) as third:
                    assert third.recv(1, socket.MSG_PEEK)  # a third handshake runs...
                    assert dropped_by_server(first)  # ...and the oldest made room for it, at once
                    wait_for_log(caplog, "it was the oldest of max_handshakes=2 handshakes running")
                    assert not dropped_by_server(second, within=0.5)
                    # a good client evicts the oldest silent peer in turn, and is served
                    good_client(server.address, run_with_deadline)
    finally:
        server.stop()


def test_an_authenticated_client_that_leaves_at_once_does_not_stop_the_server(server, run_with_deadline):
    for _ in range(3):
        conn = Client(server.address, authkey=KEY)
        conn.send_bytes(b"\xc1 not a frame: the server reads nothing from its clients")
        conn.close()
    good_client(server.address, run_with_deadline)
    server.assert_serving()


# random bytes, and random bytes after a plausible length header, from many peers in a row
PEER_BYTES = st.one_of(
    st.binary(max_size=300),
    st.binary(max_size=300).map(message),
    st.tuples(st.integers(-(2**31), 2**31 - 1), st.binary(max_size=64)).map(
        lambda t: struct.pack("!i", t[0]) + t[1]),
)


def test_random_bytes_from_peers_never_stop_the_server(server, run_with_deadline):
    @FUZZ
    @given(st.lists(PEER_BYTES, min_size=1, max_size=3))
    def peers_send(payloads):
        for payload in payloads:
            with raw_connection(server.address) as sock:
                try:
                    sock.sendall(payload)
                    sock.shutdown(socket.SHUT_WR)
                except OSError:  # the server already dropped it
                    pass
                assert dropped_by_server(sock)
        server.assert_serving()

    peers_send()
    good_client(server.address, run_with_deadline)


# -- the client's side: a rogue server with the key sends random frames ----------------------------

@FUZZ
@given(st.lists(st.one_of(st.binary(max_size=64), st.builds(data, st.integers(0, 3)),
                          st.just(encode_frame("end_of_pass", pass_num=0))), max_size=4),
       st.booleans())
def test_random_frames_from_a_server_raise_input_errors_never_hang(run_with_deadline, frames, linger):
    address = rogue_server(hello(), *frames, linger=linger)

    def read():
        with RemoteDataFlow(address, KEY, timeout=1) as flow:
            return [list(flow) for _ in range(2)]

    try:
        run_with_deadline(read, 20)
    except InputError:  # FrameError, InputWorkerError (gone, silent, failed), or others of the layer
        pass


def test_a_server_that_never_answers_the_handshake_times_out(run_with_deadline):
    with socket.create_server(("127.0.0.1", 0)) as listener:
        def connect():
            with pytest.raises(InputError, match="did not complete the authentication handshake within 1"):
                RemoteDataFlow(listener.getsockname(), KEY, timeout=1).reset_state()

        run_with_deadline(connect, 20)


def test_frames_that_are_not_msgpack_raise_frame_error(run_with_deadline):
    address = rogue_server(hello(), b"\x00\x00\x00\x7f" + b"\xff" * 100)

    def read():
        with pytest.raises(FrameError, match="malformed frame of 104 bytes from the server at 127.0.0.1"):
            with RemoteDataFlow(address, KEY, timeout=5) as flow:
                list(flow)

    run_with_deadline(read, 20)
