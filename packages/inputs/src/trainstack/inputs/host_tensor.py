"""as_host_tensor: a fed value as the host tensor a traced step takes, made cheaply and never
sharing memory with the NumPy array it came from."""
from __future__ import annotations

from typing import Any

import numpy as np
import tensorflow as tf

from trainstack.callbacks import tf_private

# the constructor tf.convert_to_tensor ends in for an array, without its dispatch; None (a counted
# fallback, see tf_private): the public call
_HOST_TENSOR: Any = tf_private.eager_tensor_type()

__all__ = ["as_host_tensor"]


def as_host_tensor(value: Any, dtype: tf.DType) -> tf.Tensor:
    """``tf.convert_to_tensor(value, dtype)``, faster for a NumPy array of that dtype (a FeedInput's
    batch) and free for an eager tensor of that dtype (returned as it is).

    An array becomes a host tensor that never shares the array's memory (a dataflow may reuse its
    arrays), made with no device named. Named (tf.convert_to_tensor names the current one),
    TensorFlow moves the new tensor there by running an op (``_EagerConst``), which cost the first
    conversion after each step about 35 microseconds on a small MLP; the step's function copies its
    inputs to their devices anyway. TensorFlow copies an array itself unless it would wrap it in
    place (:func:`_wrapped_in_place`), so only such arrays are copied here first: one copy, not two.
    """
    if _HOST_TENSOR is not None:
        if type(value) is np.ndarray and value.dtype == dtype.as_numpy_dtype:
            tf_private.ensure_eager_context()
            if _wrapped_in_place(value):
                value = value.copy()
            return tf_private.new_host_tensor(_HOST_TENSOR, value, dtype)
        if type(value) is _HOST_TENSOR and value.dtype == dtype:
            return value
    return tf.convert_to_tensor(value, dtype)


def _wrapped_in_place(value: np.ndarray) -> bool:
    """Whether TensorFlow would make ``value`` a tensor without copying it (sharing its memory).

    TensorFlow wraps an array whose address is a multiple of its kernels' alignment (64 bytes in
    the builds measured) and copies any other. Which offsets from a 64-byte boundary it wraps is
    probed once; if it wraps at any offset but 0 (another build or version), every array counts
    as wrapped and is copied first, as before this shortcut."""
    global _WRAPPED_OFFSETS
    if _WRAPPED_OFFSETS is None:
        _WRAPPED_OFFSETS = _probe_wrapped_offsets()
    return _WRAPPED_OFFSETS is _EVERY_OFFSET or value.ctypes.data % _ALIGNMENT in _WRAPPED_OFFSETS


_ALIGNMENT = 64
_EVERY_OFFSET: frozenset[int] = frozenset(range(_ALIGNMENT))
_WRAPPED_OFFSETS: frozenset[int] | None = None


def _probe_wrapped_offsets() -> frozenset[int]:
    """The offsets (from a 64-byte boundary) at which TensorFlow wraps a byte array in place."""
    raw = np.zeros(3 * _ALIGNMENT, np.uint8)
    start = -raw.ctypes.data % _ALIGNMENT
    wrapped = set()
    for offset in range(_ALIGNMENT):
        view = raw[start + offset:start + offset + _ALIGNMENT]
        tensor = tf_private.new_host_tensor(_HOST_TENSOR, view, tf.uint8)
        view[0] = 1
        if tensor.numpy()[0] == 1:
            wrapped.add(offset)
        view[0] = 0
    return frozenset(wrapped) if wrapped <= {0} else _EVERY_OFFSET
