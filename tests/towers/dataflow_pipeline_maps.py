"""The map function of test_dataflow_pipeline.py, in a plain module so that the worker
processes of MultiProcessMapData can import it by name (this folder is on ``sys.path``, see
conftest.py). It imports no TensorFlow, so the workers start fast."""
from __future__ import annotations

import numpy as np


def make_example(dp: list) -> list:
    """Datapoint ``[id]`` -> ``[x float32 (4,), label int32, id int64]``: two separable blobs,
    ``x`` drawn from a generator seeded with the id (the same example in every process)."""
    i = int(dp[0])
    label = i % 2
    x = (np.random.default_rng(i).normal(size=4) + 2.0 * label).astype(np.float32)
    return [x, np.int32(label), np.int64(i)]
