"""Shared set-up for the input tests: quiet TensorFlow, two logical CPU devices, and
a fixture that runs a read in a thread so that a hang fails its test instead of the run.

Two logical CPUs let tests place towers on distinct devices
(``/device:CPU:0`` and ``/device:CPU:1``) without any accelerator. The
devices must be configured before TensorFlow initializes them, hence here,
at import, before any test module runs.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

try:
    _cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        _cpu, [tf.config.LogicalDeviceConfiguration(), tf.config.LogicalDeviceConfiguration()])
except RuntimeError:  # devices were already initialized by an earlier import: keep them
    pass


@pytest.fixture
def read_input(run_with_deadline: Callable[..., Any]) -> Callable[..., Any]:
    """``read_input(source, signature, towers=1, **read_kwargs)``: ``(reader, batches)`` of an
    InputReader reading ``source`` as ``towers`` towers would, within 30 s (``run_with_deadline``
    of tests/conftest.py)."""
    from trainstack.inputs import InputReader  # noqa: PLC0415

    def read(source: Any, signature: Any, towers: int = 1, **read_kwargs: Any) -> tuple:
        reader = InputReader(source, signature, num_towers=towers)
        return reader, run_with_deadline(lambda: reader.read(**read_kwargs))

    return read
