"""tensorpack 0.11's ``tensorpack.tfutils.gradproc`` (the core's processors, from ``trainstack.towers``;
``PrintGradient`` and ``CheckGradient`` are tensorpack's, on ``MapGradient``)."""
from __future__ import annotations

from typing import Any, ClassVar

import tensorflow as tf

from trainstack.towers import (
    FilterNoneGrad,
    GlobalNormClip,
    GradientProcessor,
    MapGradient,
    ScaleGradient,
    SummaryGradient,
)

from .._replaced import unprovided
from .symbolic_functions import print_stat

__all__ = ["GradientProcessor", "FilterNoneGrad", "GlobalNormClip", "MapGradient", "SummaryGradient",
           "PrintGradient", "CheckGradient", "ScaleGradient"]


def _var_name(var: Any) -> str:
    return str(getattr(var, "path", None) or var.name).split(":")[0]


class PrintGradient(MapGradient):
    """Print each matching gradient's statistics every step (:func:`print_stat`, as ``<var>-grad``)."""

    _printed: ClassVar[set[str]] = set()

    def __init__(self, regex: str = ".*") -> None:
        super().__init__(self._mapper, regex)

    def _mapper(self, grad: Any, var: Any) -> Any:
        name = _var_name(var)
        if name not in PrintGradient._printed:
            PrintGradient._printed.add(name)
            grad = print_stat(grad, message=name + "-grad")
        return grad


class CheckGradient(MapGradient):
    """``tf.debugging.check_numerics`` on each gradient: a NaN or Inf stops the step naming ``CheckGradient/<var>``."""

    def __init__(self) -> None:
        super().__init__(self._mapper)

    def _mapper(self, grad: Any, var: Any) -> Any:
        return tf.debugging.check_numerics(grad, "CheckGradient/" + _var_name(var))


__getattr__ = unprovided(__name__)
