"""ZeroMQ addresses are checked before anything starts: an ``ipc://`` path longer than a Unix
socket can hold is an error naming the address, its length and the limit, from
``send_dataflow_zmq`` and from ``RemoteDataZMQ``'s constructor (ZeroMQ itself would refuse it only
once the sockets exist, for ``RemoteDataZMQ`` once a pass has started). A path at the limit, and
Linux's abstract addresses, work."""
from __future__ import annotations

import itertools
import os
import re
import sys
import threading
import uuid

import pytest

import trainstack.dataflow as ts
from trainstack.dataflow.remote_zmq import ipc_path_limit

pytest.importorskip("zmq")
LIMIT = ipc_path_limit()


def path_of_length(folder: os.PathLike, n: int) -> str:
    """A socket path of exactly ``n`` bytes in a sub-folder of ``folder`` (made here)."""
    head = os.path.join(os.fspath(folder), "")
    sub = "d" * (n - len(head) - len("/p"))
    assert len(sub) > 0, "the socket folder's own path is too long for this test"
    os.mkdir(head + sub)
    path = os.path.join(head + sub, "p")
    assert len(path) == n
    return path


def send_and_receive(addr: str, n: int = 3) -> list:
    """One pass of ``n`` datapoints through ``addr``: a sender that binds, a receiver that connects."""
    sender = threading.Thread(target=ts.send_dataflow_zmq, daemon=True,
                              args=(ts.DataFromList([[k] for k in range(n)], shuffle=False), addr),
                              kwargs={"num_passes": 1, "bind": True, "linger_s": 5})
    sender.start()
    remote = ts.RemoteDataZMQ(addr, bind=False, serializer="pickle")
    remote.reset_state()
    itr = iter(remote)
    try:
        got = list(itertools.islice(itr, n))
    finally:
        itr.close()
    sender.join(60)
    assert not sender.is_alive()
    return got


def test_the_limit_is_the_platforms():
    assert LIMIT == (107 if sys.platform.startswith("linux") else 103)


def test_a_too_long_ipc_path_is_refused_before_anything_starts(socket_dir):
    path = path_of_length(socket_dir, LIMIT + 1)
    addr = f"ipc://{path}"
    expected = re.escape(f"the ipc path of '{addr}' is {LIMIT + 1} bytes long, and a Unix socket's path holds "
                         f"at most {LIMIT}")
    with pytest.raises(ValueError, match="^send_dataflow_zmq: " + expected):
        ts.send_dataflow_zmq(ts.DataFromList([[1]]), addr, bind=True)
    with pytest.raises(ValueError, match="^RemoteDataZMQ: " + expected):
        ts.RemoteDataZMQ(addr)  # the constructor, not the first pass
    with pytest.raises(ValueError, match="^RemoteDataZMQ: " + expected):
        ts.RemoteDataZMQ("tcp://127.0.0.1:5999", addr)
    assert not os.path.exists(path)  # nothing was bound


def test_a_path_at_the_limit_binds_and_delivers(socket_dir):
    assert send_and_receive(f"ipc://{path_of_length(socket_dir, LIMIT)}") == [[0], [1], [2]]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="abstract socket addresses are Linux's")
def test_an_abstract_address_needs_no_folder():
    assert send_and_receive(f"ipc://@trainstack-test-{uuid.uuid4().hex}") == [[0], [1], [2]]


@pytest.mark.parametrize("addr", ["/tmp/pipe", "localhost:8877", ""])
def test_an_address_without_a_transport_is_an_error(addr):
    with pytest.raises(ValueError, match="transport://where|needs an address"):
        ts.RemoteDataZMQ(addr)
    if addr:
        with pytest.raises(ValueError, match=f"a ZeroMQ address is 'transport://where'.*got '{addr}'"):
            ts.send_dataflow_zmq(ts.DataFromList([[1]]), addr)
