"""TensorInput and DummyConstantInput: input tensors built by a function inside the traced step."""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import tensorflow as tf

from trainstack.loop.checks import check_int

from .base import FeedfreeInput
from .errors import InputError, InputSignatureError

__all__ = ["TensorInput", "DummyConstantInput"]


class TensorInput(FeedfreeInput):
    """Inputs made by ``get_tensor_fn()``, called once per tower inside the step's trace.

    ``get_tensor_fn`` takes no argument and returns a list (or tuple) of
    tensors in signature order, e.g. the outputs of a TF reading pipeline;
    they are evaluated at every step, so each call must yield the tower's own,
    fresh batch. ``size`` (batches per pass) is the default ``steps_per_epoch``;
    leave it None when unknown and pass ``steps_per_epoch`` to the trainer.
    """

    def __init__(self, get_tensor_fn: Callable[[], Sequence[tf.Tensor]], size: int | None = None) -> None:
        super().__init__()
        if not callable(get_tensor_fn):
            raise TypeError(f"{self.name} needs a function returning a list of tensors, "
                            f"got {get_tensor_fn!r} ({type(get_tensor_fn).__name__})")
        self._fixed_size = check_int(type(self).__name__, "size", size, minimum=1, none_ok=True)
        self.get_tensor_fn = get_tensor_fn

    def _size(self) -> int:
        if self._fixed_size is None:
            raise InputError(f"{self.name} was given no size, so the default steps_per_epoch is "
                             "unknown: pass size= to it or steps_per_epoch= to the trainer")
        return self._fixed_size

    def _get_input_tensors(self, tower_index: int) -> list[tf.Tensor]:
        tensors = self.get_tensor_fn()
        if not isinstance(tensors, (list, tuple)):
            raise InputSignatureError(
                f"{self.name}: get_tensor_fn must return a list of tensors matching "
                f"{[s.name for s in self.input_signature]}, got {type(tensors).__name__}")
        return [tf.convert_to_tensor(t) for t in tensors]


class DummyConstantInput(TensorInput):
    """Constant inputs of the given fully-defined ``shapes``, with the signature's dtypes.

    For speed tests: it measures a model without any input cost. Values are
    random, drawn once at setup (each tower its own), and the same at every
    step; floats are uniform in [0, 1), integers 0 or 1 (valid class labels),
    booleans random, strings empty. The constants live in the graph, on the
    device the tower runs on.
    """

    reads_in_tower_order = False  # each tower has its own constants

    def __init__(self, shapes: Sequence[Sequence[int]], seed: int = 0) -> None:
        super().__init__(lambda: self._constants(0))
        if isinstance(shapes, (str, bytes)) or not isinstance(shapes, Sequence):
            raise TypeError(f"{self.name}: shapes must be a list of shapes (one per input), got {shapes!r}")
        self.shapes = [tf.TensorShape(s) for s in shapes]
        self.seed = seed
        self._values: list[list[np.ndarray]] = []

    def _setup(self, signature: tuple[tf.TensorSpec, ...]) -> None:
        if len(self.shapes) != len(signature):
            raise InputSignatureError(
                f"{self.name} got {len(self.shapes)} shapes, the input signature has {len(signature)} "
                f"inputs: {[s.name for s in signature]}")
        for spec, shape in zip(signature, self.shapes):
            if not shape.is_fully_defined() or not spec.shape.is_compatible_with(shape):
                raise InputSignatureError(
                    f"{self.name}: shape {shape} given for input '{spec.name}' must be fully defined "
                    f"and compatible with its spec shape {spec.shape}")
        rng = np.random.default_rng(self.seed)
        self._values = [[_random_array(rng, spec.dtype, shape) for spec, shape in zip(signature, self.shapes)]
                        for _ in range(self.num_towers)]

    def _get_input_tensors(self, tower_index: int) -> list[tf.Tensor]:
        return self._constants(tower_index)

    def _skip(self, n: int) -> bool:
        return True  # every step gets the same batches: any position is the start

    def _constants(self, tower_index: int) -> list[tf.Tensor]:
        """Tower ``tower_index``'s constants (``get_tensor_fn`` gives the first tower's)."""
        return [tf.constant(v, dtype=spec.dtype)
                for spec, v in zip(self.input_signature, self._values[tower_index])]


def _random_array(rng: np.random.Generator, dtype: tf.DType, shape: tf.TensorShape) -> np.ndarray:
    shape = tuple(shape.as_list())
    if dtype.is_floating or dtype.is_complex:
        return rng.random(shape).astype(dtype.as_numpy_dtype)
    if dtype.is_integer:
        return rng.integers(0, 2, size=shape).astype(dtype.as_numpy_dtype)
    if dtype.is_bool:
        return rng.random(shape) < 0.5
    if dtype == tf.string:
        return np.full(shape, b"", dtype=object)
    raise InputSignatureError(f"DummyConstantInput cannot make constants of dtype {dtype.name}")
