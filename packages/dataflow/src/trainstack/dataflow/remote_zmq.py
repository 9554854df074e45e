"""tensorpack's ZeroMQ remote dataflow: :func:`send_dataflow_zmq` on the machines that make
the data, :class:`RemoteDataZMQ` on the trainer, wire-compatible with tensorpack 0.11's.

Each datapoint is one ZeroMQ message (PUSH to PULL) holding it serialized as tensorpack's
``dumps`` does: a pickle by default (what tensorpack 0.11 sends and expects), or msgpack
with msgpack-numpy's layout (``serializer="msgpack"``; tensorpack with
``TENSORPACK_SERIALIZE=msgpack``). So a tensorpack sender feeds a trainstack receiver and
the reverse (``tests/parity/test_parity_zmq.py``), and senders on other machines need not
be upgraded at once.

ZeroMQ does not authenticate peers: whoever can reach the address can send datapoints,
and unpickling a message runs the code it names. Use it on a trusted network only, and
prefer ``serializer="msgpack"`` on the receiver once the senders send msgpack. For new
setups, ``trainstack.inputs``' ``serve_dataflow`` / ``RemoteInput`` are recommended: they
authenticate the sender with a shared key and never unpickle. Needs pyzmq
(``trainstack-dataflow[zmq]``).
"""
from __future__ import annotations

import importlib
import logging
import sys
import time
from collections import deque
from collections.abc import Iterator
from typing import Any

import tqdm

from trainstack.loop.checks import check_int

from ._extras import require
from ._tensorpack_bytes import READ_MODES, SERIALIZERS, check_serializer, dumps, is_pickle, loads
from .base import DataFlow, DataFlowReentrantGuard, SizeUnknownError
from .protocol import dataflow_len_or_none, reset_dataflow

__all__ = ["send_dataflow_zmq", "RemoteDataZMQ"]

logger = logging.getLogger("trainstack.dataflow")


def ipc_path_limit() -> int:
    """The longest ``ipc://`` path, in bytes, that ZeroMQ can bind or connect here: a Unix
    socket's ``sun_path`` less its final NUL (107 on Linux, 103 on macOS and the BSDs)."""
    try:  # pyzmq's own figure when it is installed (an optional package)
        return int(importlib.import_module("zmq").IPC_PATH_MAX_LEN)
    except (ImportError, AttributeError):
        return 107 if sys.platform.startswith("linux") else 103


def check_address(who: str, addr: str) -> str:
    """``addr``, a ZeroMQ endpoint, checked before any socket exists: an ``ipc://`` path longer
    than the platform's limit is an error naming the address, its length and the limit (ZeroMQ
    would refuse it only once the sockets are made, or the pass has started)."""
    if not isinstance(addr, str) or "://" not in addr:
        raise ValueError(f"{who}: a ZeroMQ address is 'transport://where' (e.g. 'tcp://0.0.0.0:8877' or "
                         f"'ipc:///tmp/pipe'), got {addr!r}")
    if addr.startswith("ipc://"):
        path, limit = addr[len("ipc://"):], ipc_path_limit()
        if len(path.encode()) > limit:
            raise ValueError(f"{who}: the ipc path of {addr!r} is {len(path.encode())} bytes long, and a Unix "
                             f"socket's path holds at most {limit} here; use a shorter path (a folder made "
                             "with tempfile.mkdtemp(dir='/tmp')), an abstract address 'ipc://@name' on Linux, "
                             "or 'tcp://127.0.0.1:PORT'")
    return addr


def send_dataflow_zmq(df: Any, addr: str, hwm: int = 50, format: str | None = None,  # noqa: A002
                      bind: bool = False, *, serializer: str = "pickle", num_passes: int | None = None,
                      linger_s: float = 30.0) -> None:
    """Run ``df`` pass after pass and send each datapoint to the ZeroMQ address ``addr``
    (``tcp://host:port``, ``ipc://path``) with a PUSH socket that connects (``bind=False``,
    the default) or binds, buffering ``hwm`` messages; a tqdm bar shows the progress of each
    pass, as tensorpack's. Like tensorpack's it never returns, unless ``num_passes`` (an
    addition) is given: then it sends that many passes, waits up to ``linger_s`` for them to be
    delivered, and returns. The socket is closed on return, error and Ctrl-C.

    ``serializer``: ``"pickle"`` (tensorpack 0.11's default, what its ``RemoteDataZMQ``
    reads) or ``"msgpack"``. ``format="zmq_ops"`` (tensorpack's format for its zmq_ops
    TensorFlow op) is not supported.
    """
    if format is not None:
        raise NotImplementedError(f"send_dataflow_zmq: format={format!r} (tensorpack's zmq_ops) is not "
                                  "supported; use format=None with RemoteDataZMQ, or trainstack.inputs' "
                                  "serve_dataflow / RemoteInput")
    check_address("send_dataflow_zmq", addr)
    check_serializer("send_dataflow_zmq", serializer, SERIALIZERS)
    hwm = check_int("send_dataflow_zmq", "hwm", hwm, minimum=1)
    num_passes = check_int("send_dataflow_zmq", "num_passes", num_passes, minimum=1, none_ok=True,
                           note="None: forever")
    zmq = require("zmq", "send_dataflow_zmq")
    ctx = zmq.Context()
    linger_ms = 0
    try:
        socket = ctx.socket(zmq.PUSH)
        socket.set_hwm(hwm)
        if bind:
            socket.bind(addr)
        else:
            socket.connect(addr)
        reset_dataflow(df)
        logger.info("Serving data to %s with %s format ...", addr, serializer)
        latencies: deque[float] = deque(maxlen=200)
        total = dataflow_len_or_none(df) or 0
        passes = 0
        while num_passes is None or passes < num_passes:
            with tqdm.trange(total, leave=True, smoothing=0.8, dynamic_ncols=True, ascii=True) as pbar:
                for dp in df:
                    start = time.perf_counter()
                    socket.send(dumps(dp, serializer), copy=False)
                    latencies.append(time.perf_counter() - start)
                    pbar.update(1)
                    if pbar.n % 200 == 0:
                        pbar.set_postfix({"AvgSendLat": f"{sum(latencies) / len(latencies):.3f}"})
            passes += 1
        linger_ms = int(linger_s * 1000)  # finished: let the queued datapoints go out
    finally:
        logger.info("Exiting send_dataflow_zmq ...")
        ctx.destroy(linger=linger_ms)


class RemoteDataZMQ(DataFlow):
    """Datapoints received on one or two ZeroMQ PULL sockets (``addr1``, and ``addr2`` if
    given, e.g. one ``ipc://`` and one ``tcp://``) that bind (default) or connect, from
    :func:`send_dataflow_zmq` senders, tensorpack 0.11's or trainstack's. A pass never ends;
    ``len`` is unknown. ``cnt1``/``cnt2`` count the datapoints from each address. The sockets
    exist while a pass runs and are closed when it is closed (or collected).

    ``serializer="auto"`` (default) reads pickled messages (tensorpack's default, which
    *runs code a sender chooses*: trusted networks only; the first one logs a warning) and
    msgpack ones; ``"msgpack"`` refuses pickled messages with an error; ``"pickle"`` reads
    pickle only.
    """

    def __init__(self, addr1: str, addr2: str | None = None, hwm: int = 50, bind: bool = True,
                 *, serializer: str = "auto") -> None:
        if not addr1:
            raise ValueError(f"RemoteDataZMQ needs an address addr1 (e.g. 'tcp://0.0.0.0:8877'), got {addr1!r}")
        self._addr1 = check_address("RemoteDataZMQ", addr1)
        self._addr2 = None if addr2 is None else check_address("RemoteDataZMQ", addr2)
        self._hwm = check_int("RemoteDataZMQ", "hwm", hwm, minimum=1)
        self._bind = bind
        self._serializer = check_serializer("RemoteDataZMQ", serializer, READ_MODES)
        self._guard = DataFlowReentrantGuard()
        self._warned = False
        self.cnt1 = self.cnt2 = 0

    def reset_state(self) -> None:
        self.cnt1 = self.cnt2 = 0

    def __len__(self) -> int:
        raise SizeUnknownError("RemoteDataZMQ receives an endless stream: it has no size")

    def bind_or_connect(self, socket: Any, addr: str) -> None:
        if self._bind:
            socket.bind(addr)
        else:
            socket.connect(addr)

    def _decode(self, frame: Any, addr: str) -> Any:
        data = frame.buffer
        if not self._warned and self._serializer == "auto" and is_pickle(data):
            self._warned = True
            logger.warning("RemoteDataZMQ: unpickling datapoints from %s, which runs whatever code the sender "
                           "sends; trust the network, or send msgpack and pass serializer='msgpack'", addr)
        return loads(data, self._serializer, source=f"a message from {addr}")

    def __iter__(self) -> Iterator[Any]:
        zmq = require("zmq", "RemoteDataZMQ")
        with self._guard:
            ctx = zmq.Context()
            try:
                sockets = {}
                for addr in (self._addr1, self._addr2):
                    if addr:
                        socket = ctx.socket(zmq.PULL)
                        socket.set_hwm(self._hwm)
                        self.bind_or_connect(socket, addr)
                        sockets[socket] = addr
                poller = zmq.Poller()
                for socket in sockets:
                    poller.register(socket, zmq.POLLIN)
                first = next(iter(sockets))
                while True:
                    for socket, _ in poller.poll():
                        addr = sockets[socket]
                        dp = self._decode(socket.recv(copy=False), addr)
                        yield dp
                        if socket is first:
                            self.cnt1 += 1
                        else:
                            self.cnt2 += 1
            finally:
                ctx.destroy(linger=0)
