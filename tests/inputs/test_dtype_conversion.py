"""A datapoint whose dtype differs from its input's reaches the graph converted as tensorpack's feed
converted it (TF1's ``np.asarray(value, dtype=placeholder.dtype)``), or is refused with an error
naming the source, the input and the dtype, the same way through every input that takes datapoints.

What TF1's feed did, measured with ``tf.compat.v1.Session`` (the same ``session.py``): float32
[1, 2] -> int32 [1, 2]; float64 [2.7, -2.7] -> int32 [2, -2] (truncated, silently); int64 ->
float32; bool -> int32 [1, 0]; int -> bool (non-zero is True); NaN -> int32 -2147483648 (with
NumPy's RuntimeWarning); 300 -> uint8 44 (wrapped); a wrong shape: ValueError "Cannot feed value
of shape". trainstack converts the first ones (a LossyConversionWarning when values change) and
refuses the garbage ones.
"""
from __future__ import annotations

import os
import re
import sys
import threading
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import tensorflow as tf

from trainstack.dataflow import DataFromList
from trainstack.inputs import (
    BatchQueueInput,
    DataFlowServer,
    FeedInput,
    InputSignatureError,
    MultiProcessInput,
    QueueInput,
    RemoteInput,
    TFDatasetInput,
)
from trainstack.inputs.signature import LossyConversionWarning

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

KEY = b"dtype conversion"

#: name -> (the input's dtype, the datapoint's value, what reaches the graph or the error's pattern, lossy)
CASES: dict[str, tuple[tf.DType, np.ndarray, Any, bool]] = {
    "float->int32": (tf.int32, np.array([1.0, 2.0], np.float32), np.array([1, 2], np.int32), False),
    "int->float32": (tf.float32, np.array([1, 2], np.int64), np.array([1.0, 2.0], np.float32), False),
    "lossy float->int32": (tf.int32, np.array([2.7, -2.7]), np.array([2, -2], np.int32), True),
    "bool->int32": (tf.int32, np.array([True, False]), np.array([1, 0], np.int32), False),
    "bool->float32": (tf.float32, np.array([True, False]), np.array([1.0, 0.0], np.float32), False),
    "int->bool": (tf.bool, np.array([0, 1]), np.array([False, True]), False),
    "lossy int->bool": (tf.bool, np.array([0, 2]), np.array([False, True]), True),
    "nan->int32": (tf.int32, np.array([np.nan, 1.0]), r"NaN or infinity has no int32 value", False),
    "300->uint8": (tf.uint8, np.array([300, 1]), r"values from 1 to 300 do not fit uint8 \(0 to 255\)", False),
    "wrong shape": (tf.int32, np.zeros(3, np.int32), r"expects dtype int32 and shape \(2,\), got ndarray of dtype "
                    r"int32 and shape \(3,\)", False),
    "str->float32": (tf.float32, np.array(["1.5", "2"]), r"dtype <U3 does not convert to float32", False),
}


class _Server:
    """A DataFlowServer on a free local port serving one client from a thread."""

    def __init__(self, dataflow: Any) -> None:
        self.server = DataFlowServer(dataflow, ("127.0.0.1", 0), KEY)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        try:
            self.server.serve(1)
        except BaseException:  # noqa: BLE001, S110 - the client's error is what the test checks
            pass
        finally:
            self.server.close()

    def close(self) -> None:
        self.server.close()
        self.thread.join(10)
        assert not self.thread.is_alive(), "the server did not stop"


def _sources(value: np.ndarray) -> dict[str, Callable[[], tuple[Any, Callable[[], None]]]]:
    """Each input over datapoints ``[value]``: (source, cleanup)."""
    data = [[value]] * 4
    nothing = lambda: None  # noqa: E731

    def remote() -> tuple[Any, Callable[[], None]]:
        server = _Server(DataFromList(data, shuffle=False))
        return RemoteInput(server.server.address, KEY, size=4, queue_size=2), server.close

    return {
        "FeedInput": lambda: (FeedInput(data), nothing),
        "QueueInput": lambda: (QueueInput(data), nothing),
        "TFDatasetInput": lambda: (TFDatasetInput(data), nothing),
        "BatchQueueInput": lambda: (BatchQueueInput([[value]] * 4, batch_size=1), nothing),
        "MultiProcessInput": lambda: (MultiProcessInput(DataFromList(data, shuffle=False), num_workers=1), nothing),
        "RemoteInput": remote,
    }


SOURCES = list(_sources(np.zeros(1)))


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("kind", SOURCES)
def test_what_reaches_the_graph(kind, case, read_input):
    dtype, value, expected, lossy = CASES[case]
    source, cleanup = _sources(value)[kind]()
    shape = [None, 2] if kind == "BatchQueueInput" else [2]  # every value has 2 elements, but the wrong shape's
    signature = [tf.TensorSpec(shape, dtype, name="x")]
    try:
        if isinstance(expected, str):
            with pytest.raises((InputSignatureError, tf.errors.OpError)) as caught:
                read_input(source, signature, steps_per_epoch=2, max_epoch=1)
            message = str(caught.value)
            assert "'x'" in message and source.name in message, message
            assert re.search(expected, message), message
            return
        with warnings.catch_warnings(record=True) as caught_warnings:
            warnings.simplefilter("always")
            _, batches = read_input(source, signature, steps_per_epoch=2, max_epoch=1)
    finally:
        cleanup()
    got = batches[0][0][0]
    if kind == "BatchQueueInput":
        got = got[0]
    assert got.dtype == expected.dtype and got.tolist() == expected.tolist(), (kind, case, got)
    lossy_warnings = [w for w in caught_warnings if issubclass(w.category, LossyConversionWarning)]
    assert bool(lossy_warnings) == lossy, (kind, case, [str(w.message) for w in caught_warnings])
    if lossy:
        assert "'x'" in str(lossy_warnings[0].message) and source.name in str(lossy_warnings[0].message)
