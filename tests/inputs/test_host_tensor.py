"""How a fed NumPy array becomes the step's input tensor (``TracedStep``'s fast path, which every
FeedInput batch takes): same values, dtype and shape as ``tf.convert_to_tensor``, on the host, and
never sharing memory with the array (a dataflow may reuse its arrays)."""
import numpy as np
import pytest
import tensorflow as tf

from trainstack.inputs.host_tensor import as_host_tensor


def aligned(array: np.ndarray, alignment: int = 64) -> np.ndarray:
    """``array`` copied into memory aligned to ``alignment`` bytes: TensorFlow wraps such an array
    without copying it, so a conversion that forgot its own copy would share it."""
    raw = np.empty(array.nbytes + alignment, np.uint8)
    start = -raw.ctypes.data % alignment
    out = raw[start:start + array.nbytes].view(array.dtype).reshape(array.shape)
    out[...] = array
    return out


ARRAYS = {
    "float32 batch": np.random.default_rng(0).normal(size=(64, 784)).astype(np.float32),
    "float32, 64-byte aligned": aligned(np.random.default_rng(1).normal(size=(8, 16)).astype(np.float32)),
    "int32 labels": np.arange(64, dtype=np.int32),
    "empty batch": np.zeros((0, 3), np.float32),
    "Fortran order": np.asfortranarray(np.arange(35.0).reshape(5, 7)),
    "strided view": np.arange(100.0).reshape(10, 10)[::2, 1::3],
    "scalar": np.array(3.5, np.float32),
    "bool": np.array([True, False, True]),
    "bytes (tf.string)": np.array([b"ab", b"", b"xyz"], dtype=object),
}


@pytest.mark.parametrize("name", list(ARRAYS))
def test_a_fed_array_converts_as_tf_convert_to_tensor_does(name):
    array = ARRAYS[name].copy() if name != "float32, 64-byte aligned" else aligned(ARRAYS[name])
    dtype = tf.string if array.dtype == object else tf.as_dtype(array.dtype)
    expected = tf.convert_to_tensor(array, dtype)
    tensor = as_host_tensor(array, dtype)
    assert isinstance(tensor, tf.Tensor)
    assert tensor.dtype == expected.dtype and tensor.shape == expected.shape
    assert tensor.device.endswith("CPU:0")
    np.testing.assert_array_equal(tensor.numpy(), expected.numpy())
    if array.size and array.dtype != object:
        before = tensor.numpy().copy()
        array[...] = ~array if array.dtype == bool else array + 1  # the dataflow reuses its array
        np.testing.assert_array_equal(tensor.numpy(), before)


def test_other_values_take_tf_convert_to_tensor():
    assert as_host_tensor(3, tf.int64).dtype == tf.int64
    assert as_host_tensor([1.0, 2.0], tf.float32).numpy().tolist() == [1.0, 2.0]
    # an array of another dtype: TensorFlow's own conversion (FeedInput casts or refuses before)
    converted = as_host_tensor(np.array([1.0, 2.0]), tf.float32)
    assert converted.dtype == tf.float32 and converted.numpy().tolist() == [1.0, 2.0]
