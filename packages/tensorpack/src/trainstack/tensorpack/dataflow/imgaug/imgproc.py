"""tensorpack 0.11's ``tensorpack.dataflow.imgaug.imgproc``: its names from ``trainstack.dataflow.imgaug``."""
from trainstack.dataflow.imgaug import (
    Brightness,
    BrightnessScale,
    Clip,
    Contrast,
    Gamma,
    GaussianBlur,
    Hue,
    Lighting,
    MeanVarianceNormalize,
    MinMaxNormalize,
    Saturation,
)

from ..._replaced import unprovided

__all__ = ["Hue", "Brightness", "BrightnessScale", "Contrast", "MeanVarianceNormalize", "GaussianBlur", "Gamma", "Clip", "Saturation", "Lighting", "MinMaxNormalize"]

__getattr__ = unprovided(__name__)
