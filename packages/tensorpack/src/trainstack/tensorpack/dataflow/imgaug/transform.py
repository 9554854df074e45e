"""tensorpack 0.11's ``tensorpack.dataflow.imgaug.transform``: its names from
``trainstack.dataflow.imgaug``."""
from trainstack.dataflow.imgaug import (
    CropTransform,
    FlipTransform,
    ResizeTransform,
    Transform,
    TransformFactory,
    TransformList,
)

from ..._replaced import unprovided

__all__ = ["Transform", "ResizeTransform", "CropTransform", "FlipTransform", "TransformList", "TransformFactory"]

__getattr__ = unprovided(__name__)
