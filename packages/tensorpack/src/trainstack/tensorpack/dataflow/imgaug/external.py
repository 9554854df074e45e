"""tensorpack 0.11's ``tensorpack.dataflow.imgaug.external``: ``IAAugmentor`` and ``Albumentations``, wrappers of
an augmenter of the imgaug library and of a transform of the albumentations library (neither is a trainstack
dependency: constructing a wrapper without its library installed raises an ImportError naming it)."""
from __future__ import annotations

from typing import Any

import numpy as np

from trainstack.dataflow.imgaug import ImageAugmentor, Transform

from ..._optional import require
from ..._replaced import stand_in_names, unprovided

__all__ = ["IAAugmentor", "Albumentations"] + stand_in_names(__name__)


class IAATransform(Transform):
    """One deterministic imgaug augmenter applied to an image and to (x, y) keypoints on an image of ``img_shape``."""

    def __init__(self, aug: Any, img_shape: tuple[int, ...]) -> None:
        super().__init__()
        self._init(locals())

    def apply_image(self, img: np.ndarray) -> np.ndarray:
        return self.aug.augment_image(img)

    def apply_coords(self, coords: np.ndarray) -> np.ndarray:
        ia = require("imgaug", "IAAugmentor", "imgaug")
        points = ia.KeypointsOnImage([ia.Keypoint(x=x, y=y) for x, y in coords], shape=self.img_shape)
        augmented = self.aug.augment_keypoints([points])[0].keypoints
        return np.asarray([[p.x, p.y] for p in augmented])


class IAAugmentor(ImageAugmentor):
    """An ``imgaug.augmenters.Augmenter`` (aleju/imgaug, uint8 images of unchanged shape), made deterministic per
    image (``to_deterministic()``) so that an image and its coordinates get the same change."""

    def __init__(self, augmentor: Any) -> None:
        require("imgaug", "IAAugmentor", "imgaug")
        super().__init__()
        self._aug = augmentor

    def get_transform(self, img: np.ndarray) -> Any:
        return IAATransform(self._aug.to_deterministic(), img.shape)


class AlbumentationsTransform(Transform):
    """An albumentations transform's ``apply(img, **param)`` with parameters drawn once."""

    def __init__(self, aug: Any, param: dict[str, Any]) -> None:
        super().__init__()
        self._init(locals())

    def apply_image(self, img: np.ndarray) -> np.ndarray:
        return self.aug.apply(img, **self.param)


class Albumentations(ImageAugmentor):
    """An ``albumentations.BasicTransform`` on images (the library does not transform coordinates): its
    ``get_params()`` drawn per image, then its ``apply(img, **params)``, as tensorpack's wrapper."""

    def __init__(self, augmentor: Any) -> None:
        require("albumentations", "Albumentations", "albumentations")
        super().__init__()
        self._aug = augmentor

    def get_transform(self, img: np.ndarray) -> Any:
        return AlbumentationsTransform(self._aug, self._aug.get_params())


__getattr__ = unprovided(__name__)
