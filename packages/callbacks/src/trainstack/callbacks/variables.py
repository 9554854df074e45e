"""One rule each for variables and fetched values, shared by every layer above the loop.

- :func:`is_variable`: a ``tf.Variable``, a Keras 3 variable, or what behaves as one;
- :func:`variable_name`: a variable's name without ``:0`` (a Keras variable: its ``path``,
  ``dense/kernel``);
- :func:`variables_of`: the variables an object of a trainer's ``checkpoint_objects`` holds;
- :func:`to_numpy`: a fetched value (an eager tensor, a variable, NumPy or a Python value) as
  NumPy, copied to the host; rank 0 as a NumPy scalar.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import tensorflow as tf

__all__ = ["tf_variable", "is_variable", "variable_name", "variables_of", "to_numpy"]


def is_variable(x: Any) -> bool:
    """Whether ``x`` is a ``tf.Variable``, a Keras variable, or an object that behaves as one (an
    ``assign`` method, a ``dtype`` and a ``shape``: e.g. the tensorpack layer's step counter)."""
    return isinstance(x, (tf.Variable, tf.keras.Variable)) or (
        callable(getattr(x, "assign", None)) and hasattr(x, "dtype") and hasattr(x, "shape"))


def tf_variable(v: Any) -> tf.Variable:
    """The ``tf.Variable`` behind ``v``: ``v`` itself, or a Keras 3 variable's ``.value``."""
    if isinstance(v, tf.Variable):
        return v
    value = getattr(v, "value", None)
    if isinstance(value, tf.Variable):
        return value
    raise TypeError(f"{v!r} is not a tf.Variable nor a Keras variable holding one")


def variable_name(v: Any) -> str:
    """``v``'s name without ``:0``: a Keras variable's ``path`` (``dense/kernel``), a
    ``tf.Variable``'s ``name``; ``repr(v)`` for an object with neither."""
    name = getattr(v, "path", None) if not isinstance(v, tf.Variable) else None
    name = name or getattr(v, "name", None) or repr(v)
    return name[:-2] if name.endswith(":0") else name


def variables_of(obj: Any) -> list[Any]:
    """The variables ``obj`` (an object of a trainer's ``checkpoint_objects``) holds, each once:
    itself when it is a variable (:func:`is_variable`); those of each item of a list, tuple or
    dict (what an owner may declare); a Keras layer's, optimizer's or ``tf.Module``'s
    ``variables``; else, for another trackable (a ``tf.random.Generator``), the variables among
    its attributes."""
    if is_variable(obj):
        return [obj]
    if isinstance(obj, (list, tuple, dict)):
        found = [v for item in (obj.values() if isinstance(obj, dict) else obj) for v in variables_of(item)]
    else:
        variables = getattr(obj, "variables", None)
        if callable(variables):
            variables = variables()
        found = (list(variables) if variables is not None
                 else [v for v in tf.nest.flatten(getattr(obj, "__dict__", {})) if is_variable(v)])
    return list({id(v): v for v in found}.values())


def to_numpy(value: Any) -> Any:
    """A fetched value (eager tensor, variable, NumPy or Python value) as NumPy, copied to the host:
    an array, or a NumPy scalar for a value of rank 0 (what ``tf.Tensor.numpy()`` gives), so that a
    fetched scalar is a number (``float(x)``, ``check_number``) and still has ``ndim``, ``shape``
    and ``size``. NumPy values come back as they are; Python values as NumPy's (``None`` stays
    ``None``). The one conversion of fetched values: TracedStep's fetches and the callbacks'."""
    if hasattr(value, "numpy"):
        return value.numpy()
    if isinstance(value, (np.ndarray, np.generic)):
        return value
    return np.asarray(value)[()]
