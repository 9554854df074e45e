"""tensorpack 0.11's ``tensorpack.models.shape_utils``: a tensor's shape kept static (Python ints) where known and
dynamic (``tf.shape``) elsewhere, through per-axis functions. tensorpack left its ``__all__`` empty; here the names
are public, as the mirror counts a module's public definitions when its ``__all__`` is empty."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tensorflow as tf

from .._replaced import stand_in_names, unprovided

__all__ = ["StaticDynamicAxis", "DynamicLazyAxis", "StaticLazyAxis", "StaticDynamicShape"] + stand_in_names(__name__)


class StaticDynamicAxis:
    """One axis as a static value and a dynamic one; :meth:`apply` keeps it static while ``f`` takes the value."""

    def __init__(self, static: Any, dynamic: Any) -> None:
        self.static = static
        self.dynamic = dynamic

    def apply(self, f: Callable[[Any], Any]) -> StaticDynamicAxis:
        try:
            st = f(self.static)
            return StaticDynamicAxis(st, st)
        except TypeError:
            return StaticDynamicAxis(None, f(self.dynamic))

    def __str__(self) -> str:
        return f"S={self.static}, D={self.dynamic}"


def DynamicLazyAxis(shape: Any, idx: int) -> Callable[[], Any]:  # noqa: N802 - tensorpack's name
    """``shape[idx]``, read when called."""
    return lambda: shape[idx]


def StaticLazyAxis(dim: Any) -> Callable[[], Any]:  # noqa: N802 - tensorpack's name
    """``dim``, when called."""
    return lambda: dim


class StaticDynamicShape:
    """The shape of ``tensor``: ``get_static()`` (None where unknown) and ``get_dynamic()`` (ints where known,
    else ``tf.shape(tensor)[k]``), both following the functions :meth:`apply` gave each axis."""

    def __init__(self, tensor: tf.Tensor) -> None:
        if not isinstance(tensor, tf.Tensor):
            raise TypeError(f"StaticDynamicShape takes a tf.Tensor, got {tensor!r}")
        ndims = tensor.shape.ndims
        self.static = tensor.shape.as_list()
        if tensor.shape.is_fully_defined():
            self.dynamic: list[Any] = self.static[:]
        else:
            dynamic = tf.shape(tensor)
            self.dynamic = [DynamicLazyAxis(dynamic, k) for k in range(ndims)]
        for k in range(ndims):
            if self.static[k] is not None:
                self.dynamic[k] = StaticLazyAxis(self.static[k])

    def apply(self, axis: int, f: Callable[[Any], Any]) -> None:
        """Replace ``axis`` by ``f(axis)``: static while ``f`` can take the static value, else dynamic."""
        if self.static[axis] is not None:
            try:
                st = f(self.static[axis])
                self.static[axis] = st
                self.dynamic[axis] = StaticLazyAxis(st)
                return
            except TypeError:
                pass
        self.static[axis] = None
        dyn = self.dynamic[axis]
        self.dynamic[axis] = lambda: f(dyn())

    def get_static(self) -> list[Any]:
        return self.static

    @property
    def ndims(self) -> int:
        return len(self.static)

    def get_dynamic(self, axis: int | None = None) -> Any:
        if axis is None:
            return [self.dynamic[k]() for k in range(self.ndims)]
        return self.dynamic[axis]()


__getattr__ = unprovided(__name__)
