"""Remote input over TCP on 127.0.0.1: round trip, authentication, malformed and oversized frames."""
from __future__ import annotations

import logging
import os
import pickle
import socket
import sys
import threading
import time
from multiprocessing.connection import Listener

import msgpack
import numpy as np
import pytest
import tensorflow as tf

from trainstack.inputs import (
    DataFlowServer,
    FrameError,
    InputError,
    InputReader,
    InputWorkerError,
    RemoteDataFlow,
    RemoteInput,
    serve_dataflow,
)
from trainstack.inputs.codec import dumps, encode_frame

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)
import mp_dataflows  # noqa: E402

KEY = b"shared secret"
SIGNATURE = [tf.TensorSpec([], tf.int64, name="id"), tf.TensorSpec([2, 2], tf.float32, name="image")]


class ServerThread:
    """A DataFlowServer on a free port of 127.0.0.1, serving ``max_clients`` clients in a thread."""

    def __init__(self, dataflow, max_clients: int = 1, **kwargs) -> None:
        self.server = DataFlowServer(dataflow, ("127.0.0.1", 0), KEY, **kwargs)
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(max_clients,), daemon=True)
        self.thread.start()

    @property
    def address(self):
        return self.server.address

    def _run(self, max_clients):
        try:
            self.server.serve(max_clients)
        except BaseException as e:  # noqa: BLE001 - the test inspects it
            self.error = e
        finally:
            self.server.close()

    def join(self) -> None:
        self.thread.join(10)
        assert not self.thread.is_alive(), "the server did not return after its clients left"


def rogue_server(*frames: bytes, linger: bool = True):
    """A server with the right key that sends ``frames`` (any bytes), then waits for the client
    to leave (``linger``) or disconnects."""
    listener = Listener(("127.0.0.1", 0), authkey=KEY)

    def run():
        with listener, listener.accept() as conn:
            for frame in frames:
                conn.send_bytes(frame)
            if linger:
                conn.poll(10)  # until the client disconnects

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return listener.address


def hello(size=None) -> bytes:
    return encode_frame("hello", size=size)


def data(i: int, pass_num: int = 0) -> bytes:
    return encode_frame("data", pass_num=pass_num, datapoint=mp_dataflows.datapoint(i))


def test_round_trip_through_a_trainer():
    server = ServerThread(mp_dataflows.IdFlow(6))
    source = RemoteInput(server.address, KEY, size=6, queue_size=2)
    batches = InputReader(source, SIGNATURE).read(max_epoch=3)
    ids = [int(b[0][0]) for b in batches]
    assert ids == list(range(6)) * 3  # one server: each pass in order
    for b in batches:
        np.testing.assert_array_equal(b[0][1], np.full((2, 2), int(b[0][0]), np.float32))
    server.join()  # training ended, the client left, the server returned
    assert server.error is None


def test_serve_dataflow_serves_clients_one_after_another():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    thread = threading.Thread(target=serve_dataflow, args=(mp_dataflows.IdFlow(3), f"127.0.0.1:{port}", KEY),
                              kwargs={"max_clients": 2}, daemon=True)
    thread.start()
    for _ in range(2):
        for _attempt in range(50):  # until the server listens
            try:
                flow = RemoteDataFlow(("127.0.0.1", port), KEY, size=3)
                flow.reset_state()
                break
            except InputError:
                time.sleep(0.05)
        with flow:
            assert [[int(dp[0]) for dp in flow] for _ in range(2)] == [[0, 1, 2], [0, 1, 2]]
    thread.join(10)
    assert not thread.is_alive()


def test_a_wrong_key_is_refused_and_logged(caplog):
    server = ServerThread(mp_dataflows.IdFlow(3))
    host, port = server.address
    with caplog.at_level(logging.WARNING, logger="trainstack.inputs"):
        with pytest.raises(InputError, match=f"authentication with the server at {host}:{port} failed"):
            RemoteDataFlow(server.address, b"wrong key").reset_state()
        deadline = time.monotonic() + 5
        while "refused" not in caplog.text and time.monotonic() < deadline:
            time.sleep(0.02)
    assert f"refused a connection from {host}:" in caplog.text
    with RemoteDataFlow(server.address, KEY) as flow:  # the server still serves clients with the key
        assert [int(dp[0]) for dp in flow] == [0, 1, 2]
    server.join()


def test_a_wrong_key_stops_training_with_the_error():
    server = ServerThread(mp_dataflows.IdFlow(3))
    with pytest.raises(InputError, match="authentication"):
        InputReader(RemoteInput(server.address, b"wrong", size=3), SIGNATURE).read()
    with RemoteDataFlow(server.address, KEY) as flow:
        assert len(list(flow)) == 3
    server.join()


class _Creates:
    """Unpickling this would create a file: the client must never get that far."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


@pytest.mark.parametrize("frames", [
    [b"\xc1garbage"],
    [hello(), b"\x93\x01\x02"],
    [hello(), dumps({"kind": "data", "pass_num": 0})],
    [hello(), dumps({"kind": "data", "pass_num": 0, "datapoint": [
        msgpack.ExtType(1, msgpack.packb(["|O", [1], b"\0" * 8]))]})],
    [hello(), data(0), encode_frame("end_of_pass", pass_num=5)],
    [encode_frame("end_of_pass", pass_num=0)],
], ids=["garbage", "truncated", "missing field", "object array", "pass out of order", "no hello"])
def test_malformed_frames_raise_frame_error_naming_the_server(frames):
    address = rogue_server(*frames)
    with pytest.raises(FrameError, match=f"{address[0]}:{address[1]}"):
        with RemoteDataFlow(address, KEY) as flow:
            list(flow)


def test_a_pickle_from_the_server_is_refused_not_unpickled(tmp_path):
    target = tmp_path / "created"
    address = rogue_server(hello(), pickle.dumps(_Creates(str(target))))
    with pytest.raises(FrameError, match="malformed"):
        with RemoteDataFlow(address, KEY) as flow:
            list(flow)
    assert not target.exists()


def test_an_oversized_frame_is_refused():
    big = encode_frame("data", pass_num=0, datapoint=[np.zeros(4096, np.float32)])
    address = rogue_server(hello(), data(0), big)
    with RemoteDataFlow(address, KEY, max_frame_bytes=4096) as flow:
        it = iter(flow)
        assert int(next(it)[0]) == 0
        with pytest.raises(FrameError, match="longer than max_frame_bytes=4096"):
            next(it)


def test_the_server_refuses_to_send_an_oversized_frame():
    server = ServerThread(mp_dataflows.IdFlow(3), max_frame_bytes=64)
    with RemoteDataFlow(server.address, KEY) as flow:
        with pytest.raises(InputWorkerError, match="more than max_frame_bytes=64"):
            list(flow)
    server.join()
    assert isinstance(server.error, FrameError)


def test_a_malformed_frame_stops_training(run_with_deadline):
    address = rogue_server(hello(10), data(0), data(1), data(2), b"\xc1garbage")
    reader = InputReader(RemoteInput(address, KEY, size=10, queue_size=1), SIGNATURE)
    with pytest.raises(FrameError, match="malformed"):
        run_with_deadline(lambda: reader.read(max_epoch=2), 120)  # a hang guard only
    assert [int(b[0][0]) for b in reader.batches] == [0, 1, 2]


def test_errors_of_the_server_and_its_going_away_reach_the_client(run_with_deadline):
    server = ServerThread(mp_dataflows.FailingFlow(10, fail_at=4))
    with RemoteDataFlow(server.address, KEY) as flow:
        with pytest.raises(InputWorkerError, match="boom at datapoint 4"):
            list(flow)
    server.join()
    assert isinstance(server.error, ValueError)

    address = rogue_server(hello(), data(0), linger=False)
    with RemoteDataFlow(address, KEY, timeout=5) as flow:
        with pytest.raises(InputWorkerError, match="closed the connection"):
            list(flow)

    address = rogue_server(hello(), data(0))  # then sends nothing
    with RemoteDataFlow(address, KEY, timeout=0.5) as flow:
        with pytest.raises(InputWorkerError, match=r"no frame from the server .* for 0.5 s"):
            run_with_deadline(lambda: list(flow), 120)  # a hang guard only


def test_a_failed_iteration_disconnects_before_the_error_is_raised():
    address = rogue_server(hello(), data(0), b"\xc1garbage")  # lingers until the client leaves
    with RemoteDataFlow(address, KEY) as flow:
        it = iter(flow)
        assert int(next(it)[0]) == 0
        with pytest.raises(FrameError, match="malformed"):
            next(it)
        assert flow._conn is None  # the socket is closed by the time the caller sees the error
        # the stream does not silently start over on a new connection: that needs reset_state()
        with pytest.raises(InputError, match=r"disconnected because an iteration failed .*reset_state\(\)"):
            next(iter(flow))


def test_connection_problems_and_bad_arguments():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens there once closed
    with pytest.raises(InputError, match=f"cannot connect to 127.0.0.1:{port}"):
        RemoteDataFlow(("127.0.0.1", port), KEY).reset_state()

    server = ServerThread(mp_dataflows.IdFlow(4))
    with pytest.raises(InputError, match="size=5, but a pass of the server .* has 4"):
        RemoteDataFlow(server.address, KEY, size=5).reset_state()
    server.join()

    with pytest.raises(ValueError, match="authkey"):
        RemoteDataFlow(("127.0.0.1", port), b"")
    with pytest.raises(ValueError, match="address"):
        RemoteDataFlow("localhost", KEY)
    with pytest.raises(InputError, match="size="):
        RemoteInput(("127.0.0.1", port), KEY).size()
