"""tensorpack 0.11's ``tensorpack.tfutils.gradproc``: its names from ``trainstack.towers``."""
from trainstack.towers import (
    FilterNoneGrad,
    GlobalNormClip,
    GradientProcessor,
    MapGradient,
    ScaleGradient,
    SummaryGradient,
)

from .._replaced import unprovided

__all__ = ["GradientProcessor", "FilterNoneGrad", "GlobalNormClip", "MapGradient", "SummaryGradient", "ScaleGradient"]

__getattr__ = unprovided(__name__)
