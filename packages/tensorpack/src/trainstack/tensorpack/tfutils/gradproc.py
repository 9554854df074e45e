"""tensorpack 0.11's ``tensorpack.tfutils.gradproc`` (the core's processors, from ``trainstack.towers``;
``SummaryGradient``, ``PrintGradient`` and ``CheckGradient`` are tensorpack's, on ``MapGradient``)."""
from __future__ import annotations

from typing import Any, ClassVar

import tensorflow as tf

from trainstack.callbacks import add_moving_summary, get_summary_collection, variable_name
from trainstack.towers import FilterNoneGrad, GlobalNormClip, GradientProcessor, MapGradient, ScaleGradient

from .._replaced import unprovided
from ..tf1 import in_merged_collections
from .symbolic_functions import print_stat, rms

__all__ = ["GradientProcessor", "FilterNoneGrad", "GlobalNormClip", "MapGradient", "SummaryGradient",
           "PrintGradient", "CheckGradient", "ScaleGradient"]


class SummaryGradient(MapGradient):
    """tensorpack's: for each gradient matching ``regex``, its histogram, tagged
    ``SummaryGradient/<var>-grad``, and the moving average of its RMS, ``SummaryGradient/<var>/rms``:
    the names tensorpack's graph gave them (its processors ran in a name scope of their class's name).
    Recorded where the trainer records the step's summaries (the main training tower's step).
    ``collections`` keeps TF1's meaning for the histogram: written only with ``summaries`` among them.
    (``trainstack.towers.SummaryGradient`` names them ``<var>-grad-histogram``, ``<var>-grad-rms``, and
    adds ``grad_global_norm``.)"""

    def __init__(self, regex: str = ".*", collections: Any = None) -> None:
        super().__init__(self._mapper, regex)
        self._collections = collections

    def _mapper(self, grad: Any, var: Any) -> Any:
        collection = get_summary_collection()
        if collection is not None:
            name = f"SummaryGradient/{variable_name(var)}"
            dense = tf.convert_to_tensor(grad)
            if self._collections is None or in_merged_collections("summary.histogram", f"{name}-grad",
                                                                   self._collections):
                collection.add_summary(dense, f"{name}-grad", "histogram", exact_name=True)
            add_moving_summary(rms(dense), name=f"{name}/rms", collection=collection)
        return grad


class PrintGradient(MapGradient):
    """Print each matching gradient's statistics every step (:func:`print_stat`, as ``<var>-grad``)."""

    _printed: ClassVar[set[str]] = set()

    def __init__(self, regex: str = ".*") -> None:
        super().__init__(self._mapper, regex)

    def _mapper(self, grad: Any, var: Any) -> Any:
        name = variable_name(var)
        if name not in PrintGradient._printed:
            PrintGradient._printed.add(name)
            grad = print_stat(grad, message=name + "-grad")
        return grad


class CheckGradient(MapGradient):
    """``tf.debugging.check_numerics`` on each gradient: a NaN or Inf stops the step naming ``CheckGradient/<var>``."""

    def __init__(self) -> None:
        super().__init__(self._mapper)

    def _mapper(self, grad: Any, var: Any) -> Any:
        return tf.debugging.check_numerics(grad, "CheckGradient/" + variable_name(var))


__getattr__ = unprovided(__name__)
