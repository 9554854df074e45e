"""Shared set-up for the input tests: quiet TensorFlow, two logical CPU devices.

Two logical CPUs let tests place towers on distinct devices
(``/device:CPU:0`` and ``/device:CPU:1``) without any accelerator. The
devices must be configured before TensorFlow initializes them, hence here,
at import, before any test module runs.
"""
from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

try:
    _cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        _cpu, [tf.config.LogicalDeviceConfiguration(), tf.config.LogicalDeviceConfiguration()])
except RuntimeError:  # devices were already initialized by an earlier import: keep them
    pass
