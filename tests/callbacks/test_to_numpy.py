"""One conversion of fetched values, ``trainstack.callbacks.to_numpy``, for TracedStep's fetches and the
callbacks alike (tests/towers/test_tower.py checks TracedStep's fetches): NumPy, with a rank-0 value a NumPy scalar (a number, as ``tf.Tensor.numpy()`` gives).

The two helpers it replaces differed: the step's left anything but a ``tf.Tensor`` as it was (a
variable stayed a variable), the callbacks' made every value an array (a fetched scalar became a 0-d
array, which is not a number to ``check_number`` or ``isinstance(x, numbers.Real)``)."""
from __future__ import annotations

import numbers

import keras
import numpy as np
import tensorflow as tf

from trainstack.callbacks import to_numpy
from trainstack.loop.checks import check_number


def test_tensors_and_variables_become_numpy_with_scalars_as_numbers():
    scalar = to_numpy(tf.constant(2.5))
    assert isinstance(scalar, np.float32) and isinstance(scalar, numbers.Real) and scalar.ndim == 0
    assert check_number("put_scalar", "value", scalar) == 2.5
    vector = to_numpy(tf.Variable([1.0, 2.0]))
    assert isinstance(vector, np.ndarray) and vector.tolist() == [1.0, 2.0]
    keras_var = to_numpy(keras.Variable(np.ones((2, 2), np.float32)))
    assert isinstance(keras_var, np.ndarray) and keras_var.shape == (2, 2)
    assert isinstance(to_numpy(tf.Variable(3)), np.int32)  # a variable of rank 0: a number too


def test_numpy_comes_back_as_it_is_and_python_values_as_numpy():
    array = np.arange(3)
    assert to_numpy(array) is array
    number = np.float64(1.5)
    assert to_numpy(number) is number
    assert isinstance(to_numpy(3), np.integer) and to_numpy(3) == 3
    assert isinstance(to_numpy([1, 2]), np.ndarray) and to_numpy([1, 2]).tolist() == [1, 2]
    assert to_numpy(None) is None
