"""The dataflows' counts go through trainstack.loop.checks: non-integers such as 2.7 (which some
used to truncate to 2), integral floats and bools are refused, with one wording everywhere."""
from __future__ import annotations

import re

import numpy as np
import pytest

from trainstack.dataflow import (
    BatchData,
    DataFromList,
    FakeData,
    FixedSizeData,
    LocallyShuffleData,
    MultiProcessDataFlow,
    MultiProcessMapData,
    MultiProcessRunner,
    MultiProcessRunnerZMQ,
    MultiThreadMapData,
    RepeatedData,
    RepeatedDataPoint,
    fix_rng_seed,
)
from trainstack.loop import TrainLoop
from trainstack.loop.checks import ArgumentError


def _ds():
    return DataFromList([[i] for i in range(4)], shuffle=False)


def _identity(x):
    return x


# (what is built, its owner and argument, what is expected): one per former spelling of the check
CASES = [
    (lambda v: RepeatedDataPoint(_ds(), v), "RepeatedDataPoint(num=...)", "a positive integer"),
    (lambda v: BatchData(_ds(), v), "BatchData(batch_size=...)", "a positive integer"),
    (lambda v: RepeatedData(_ds(), v), "RepeatedData(num=...)", "an integer >= -1"),
    (lambda v: FixedSizeData(_ds(), v), "FixedSizeData(size=...)", "a non-negative integer"),
    (lambda v: LocallyShuffleData(_ds(), v), "LocallyShuffleData(buffer_size=...)", "a positive integer"),
    (lambda v: FakeData([[2]], size=v), "FakeData(size=...)", "a non-negative integer"),
    (lambda v: MultiProcessRunner(_ds(), v, 1), "MultiProcessRunner(num_prefetch=...)", "a positive integer"),
    (lambda v: MultiProcessRunnerZMQ(_ds(), 1, hwm=v), "MultiProcessRunnerZMQ(hwm=...)", "a positive integer"),
    (lambda v: MultiProcessDataFlow(_ds(), v), "MultiProcessDataFlow(num_workers=...)", "a positive integer"),
    (lambda v: MultiProcessMapData(_ds(), 1, _identity, buffer_size=v), "MultiProcessMapData(buffer_size=...)",
     "a positive integer"),
    (lambda v: MultiThreadMapData(_ds(), v, _identity), "MultiThreadMapData(num_thread=...)",
     "a positive integer or None"),
    (lambda v: fix_rng_seed(v), "fix_rng_seed(seed=...)", "an integer or None"),
    # the loop, a layer below, words it the same way
    (lambda v: TrainLoop().configure(v, None, 1), "TrainLoop.configure(steps_per_epoch=...)",
     "a non-negative integer"),
]


@pytest.fixture(autouse=True)
def no_fixed_seed():
    yield
    fix_rng_seed(None)


@pytest.mark.parametrize("value", [2.7, 2.0, True, "2"], ids=["2.7", "2.0", "True", "str"])
@pytest.mark.parametrize("build, owner_arg, expected", CASES, ids=[c[1].split("=")[0] for c in CASES])
def test_non_integer_counts_are_refused_with_one_wording(build, owner_arg, expected, value):
    with pytest.raises(ArgumentError) as info:
        build(value)
    message = str(info.value)
    assert message.startswith(f"{owner_arg} must be {expected}, got {value!r}"), message
    # the errors of the checks these replace were ValueErrors or TypeErrors: both still catch it
    assert isinstance(info.value, ValueError) and isinstance(info.value, TypeError)


def test_repeated_datapoint_no_longer_truncates():
    with pytest.raises(ValueError, match=re.escape("RepeatedDataPoint(num=...) must be a positive integer, "
                                                   "got 2.7")):
        RepeatedDataPoint(_ds(), 2.7)


@pytest.mark.parametrize("count", [2, np.int64(2), np.int32(2)], ids=["int", "int64", "int32"])
def test_numpy_integers_are_counts(count):
    ds = RepeatedDataPoint(_ds(), count)
    assert ds.num == 2 and type(ds.num) is int and len(ds) == 8
    assert BatchData(_ds(), count).batch_size == 2 and len(FixedSizeData(_ds(), count)) == 2
