"""The differential suite, ZeroMQ remote dataflows: a tensorpack 0.11 ``send_dataflow_zmq`` (in
another process, as on another machine) feeds trainstack's ``RemoteDataZMQ``, and trainstack's
``send_dataflow_zmq`` feeds tensorpack's ``RemoteDataZMQ``, with tensorpack's default pickle
format and with its msgpack format.
"""
from __future__ import annotations

import itertools
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import Any

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)
from pipelines import mixed_types, msgpack_types, observe, tp, ts  # noqa: E402
from tensorpack.utils.serialize import MsgpackSerializer  # noqa: E402

TIMEOUT_S = 60.0

# tensorpack's sender, alone in its process; TensorFlow is blocked (tensorpack.dataflow works
# without it, and importing it would take seconds)
SENDER = """
import sys
sys.modules["tensorflow"] = None
sys.path.insert(0, {here!r})
import tensorpack.dataflow as tp
from pipelines import {datapoints}
tp.send_dataflow_zmq(tp.DataFromList({datapoints}(), shuffle=False), {addr!r}, hwm=5)
"""


def run_within(fn: Callable[[], Any], what: str, diagnose: Callable[[], str] = lambda: "") -> Any:
    """``fn()`` in a thread, failing the test when it takes more than ``TIMEOUT_S`` (a receiver
    waits forever for a sender that does not send)."""
    result: dict[str, Any] = {}

    def target() -> None:
        try:
            result["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - re-raised in the test's thread
            result["error"] = e

    th = threading.Thread(target=target, daemon=True)
    th.start()
    th.join(TIMEOUT_S)
    if th.is_alive():
        pytest.fail(f"{what} did not finish within {TIMEOUT_S} s. {diagnose()}")
    if "error" in result:
        raise result["error"]
    return result["value"]


def receive(ds: Any, n: int) -> list[Any]:
    """The first ``n`` datapoints of one pass of ``ds``; the pass is then closed (its sockets too)."""
    ds.reset_state()
    itr = iter(ds)
    try:
        return list(itertools.islice(itr, n))
    finally:
        itr.close()


def start_tensorpack_sender(tmp_path: Any, addr: str, datapoints: str, env: dict[str, str] | None = None
                            ) -> tuple[subprocess.Popen, Callable[[], str]]:
    log = open(tmp_path / "sender.log", "w")  # noqa: SIM115 - closed with the process below
    proc = subprocess.Popen([sys.executable, "-c", SENDER.format(here=HERE, datapoints=datapoints, addr=addr)],
                            stdout=subprocess.DEVNULL, stderr=log, env={**os.environ, **(env or {})})
    log.close()
    return proc, lambda: "tensorpack's sender said: " + (tmp_path / "sender.log").read_text()[-3000:]


def stop(proc: subprocess.Popen) -> None:
    proc.kill()
    proc.wait(10)


def test_a_tensorpack_sender_feeds_a_trainstack_receiver(tmp_path, socket_dir):
    addr = f"ipc://{socket_dir}/pipe"
    proc, diagnose = start_tensorpack_sender(tmp_path, addr, "mixed_types")
    try:
        remote = ts.RemoteDataZMQ(addr)
        got = run_within(lambda: receive(remote, 2 * len(mixed_types())), "receiving from tensorpack", diagnose)
    finally:
        stop(proc)
    # one sender: its order, pass after pass; every type arrives as tensorpack's receiver gives it
    assert [observe(dp) for dp in got] == [observe(dp) for dp in mixed_types()] * 2
    # as in tensorpack, a datapoint is counted once the next one is asked for (after its yield)
    assert remote.cnt1 == 2 * len(mixed_types()) - 1
    with pytest.raises(TypeError):
        len(remote)


def test_a_trainstack_sender_feeds_a_tensorpack_receiver(socket_dir):
    addr = f"ipc://{socket_dir}/pipe"
    n = len(mixed_types())
    sender = threading.Thread(target=ts.send_dataflow_zmq, daemon=True,
                              args=(ts.DataFromList(mixed_types(), shuffle=False), addr),
                              kwargs={"num_passes": 2, "linger_s": 5})
    sender.start()
    remote = tp.RemoteDataZMQ(addr)
    got = run_within(lambda: receive(remote, 2 * n), "tensorpack receiving from trainstack")
    sender.join(TIMEOUT_S)
    assert not sender.is_alive(), "send_dataflow_zmq(num_passes=2) did not return once its passes were sent"
    assert [observe(dp) for dp in got] == [observe(dp) for dp in mixed_types()] * 2


def test_msgpack_both_ways(tmp_path, socket_dir, monkeypatch):
    """tensorpack with ``TENSORPACK_SERIALIZE=msgpack`` and trainstack with
    ``serializer="msgpack"`` understand each other, and agree on what a datapoint becomes."""
    expected = [observe(MsgpackSerializer.loads(MsgpackSerializer.dumps(dp))) for dp in msgpack_types()]
    addr = f"ipc://{socket_dir}/one"
    proc, diagnose = start_tensorpack_sender(tmp_path, addr, "msgpack_types", {"TENSORPACK_SERIALIZE": "msgpack"})
    try:
        remote = ts.RemoteDataZMQ(addr, serializer="msgpack")
        got = run_within(lambda: receive(remote, len(expected)), "receiving msgpack from tensorpack", diagnose)
    finally:
        stop(proc)
    assert [observe(dp) for dp in got] == expected

    addr = f"ipc://{socket_dir}/two"
    monkeypatch.setattr(sys.modules["tensorpack.dataflow.remote"], "loads", MsgpackSerializer.loads)
    sender = threading.Thread(target=ts.send_dataflow_zmq, daemon=True,
                              args=(ts.DataFromList(msgpack_types(), shuffle=False), addr),
                              kwargs={"num_passes": 1, "serializer": "msgpack", "linger_s": 5})
    sender.start()
    got = run_within(lambda: receive(tp.RemoteDataZMQ(addr), len(expected)), "tensorpack receiving msgpack")
    sender.join(TIMEOUT_S)
    assert [observe(dp) for dp in got] == expected


def test_a_msgpack_receiver_refuses_tensorpacks_pickles_with_an_error(tmp_path, socket_dir):
    """Documented difference: ``serializer="msgpack"`` never unpickles what a peer sends."""
    addr = f"ipc://{socket_dir}/pipe"
    proc, diagnose = start_tensorpack_sender(tmp_path, addr, "mixed_types")
    try:
        remote = ts.RemoteDataZMQ(addr, serializer="msgpack")
        with pytest.raises(ValueError, match="is pickled .*refuses pickle"):
            run_within(lambda: receive(remote, 1), "receiving from tensorpack", diagnose)
    finally:
        stop(proc)


def test_two_addresses_and_connecting_receivers(socket_dir):
    """``addr2`` and ``bind=False`` as tensorpack's: two senders that bind, one receiver that
    connects to both; ``cnt1``/``cnt2`` count each."""
    addrs = [f"ipc://{socket_dir}/a", f"ipc://{socket_dir}/b"]
    senders = [threading.Thread(target=ts.send_dataflow_zmq, daemon=True,
                                args=(ts.DataFromList([[k, i] for k in range(4)], shuffle=False), addr),
                                kwargs={"num_passes": 1, "bind": True, "linger_s": 5})
               for i, addr in enumerate(addrs)]
    for th in senders:
        th.start()
    remote = ts.RemoteDataZMQ(addrs[0], addrs[1], bind=False)
    got = run_within(lambda: receive(remote, 8), "receiving from two senders")
    assert sorted(got) == sorted([k, i] for k in range(4) for i in range(2))
    assert [dp for dp in got if dp[1] == 0] == [[k, 0] for k in range(4)]  # each sender's order kept
    assert remote.cnt1 + remote.cnt2 == 7 and min(remote.cnt1, remote.cnt2) >= 3  # counted after the yield
    for th in senders:
        th.join(TIMEOUT_S)


def test_send_dataflow_zmq_argument_errors():
    with pytest.raises(NotImplementedError, match="zmq_ops"):
        ts.send_dataflow_zmq(ts.DataFromList([[1]]), "ipc:///nowhere", format="zmq_ops")
    with pytest.raises(ValueError, match="serializer must be one of"):
        ts.send_dataflow_zmq(ts.DataFromList([[1]]), "ipc:///nowhere", serializer="json")
    with pytest.raises(ValueError, match="needs an address"):
        ts.RemoteDataZMQ("")
