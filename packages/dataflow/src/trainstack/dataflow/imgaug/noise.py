"""Noise augmentors: :class:`GaussianNoise`, :class:`SaltPepperNoise` and :class:`JpegNoise`
(tensorpack 0.11's ``noise``), drawing from ``self.rng`` as tensorpack does."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ._cv2 import cv2
from .base import PhotometricAugmentor

__all__ = ["JpegNoise", "GaussianNoise", "SaltPepperNoise"]


class JpegNoise(PhotometricAugmentor):
    """Encode as JPEG with a random quality from [low, high) of ``quality_range`` and decode
    again (as a 3-channel image, like tensorpack), keeping the dtype."""

    quality_range: Sequence[int]

    def __init__(self, quality_range: Sequence[int] = (40, 100)) -> None:
        super().__init__()
        self._init(locals())

    def _get_augment_params(self, img: np.ndarray) -> Any:
        return self.rng.randint(*self.quality_range)

    def _augment(self, img: np.ndarray, q: Any) -> np.ndarray:
        cv = cv2("JpegNoise")
        try:
            ok, enc = cv.imencode(".jpg", img, [cv.IMWRITE_JPEG_QUALITY, q])
        except cv.error as e:
            raise ValueError(f"JpegNoise cannot encode an image of shape {img.shape} and dtype {img.dtype} as "
                             "JPEG: expected an HxW, HxWx1 or HxWx3 uint8 image") from e
        return cv.imdecode(enc, 1).astype(img.dtype)


class GaussianNoise(PhotometricAugmentor):
    """Add N(0, sigma^2) noise to every element (one ``rng.randn`` of the image's shape);
    clip to [0, 255] when ``clip`` (always for uint8), keeping the dtype."""

    sigma: float
    clip: bool

    def __init__(self, sigma: float = 1, clip: bool = True) -> None:
        super().__init__()
        self._init(locals())

    def _get_augment_params(self, img: np.ndarray) -> Any:
        return self.rng.randn(*img.shape)

    def _augment(self, img: np.ndarray, noise: Any) -> np.ndarray:
        old_dtype = img.dtype
        ret = img + noise * self.sigma
        if self.clip or old_dtype == np.uint8:
            ret = np.clip(ret, 0, 255)
        return ret.astype(old_dtype)


class SaltPepperNoise(PhotometricAugmentor):
    """Set each element (each channel separately) to 255 with probability ``white_prob`` and
    to 0 with probability ``black_prob`` (one uniform draw of the image's shape). Changes the
    image in place, as tensorpack does (the ``AugmentImage*`` dataflows copy it first)."""

    white_prob: float
    black_prob: float

    def __init__(self, white_prob: float = 0.05, black_prob: float = 0.05) -> None:
        if not white_prob + black_prob <= 1:
            raise ValueError(f"SaltPepperNoise: white_prob + black_prob must be <= 1, got "
                             f"{white_prob} + {black_prob}")
        super().__init__()
        self._init(locals())

    def _get_augment_params(self, img: np.ndarray) -> Any:
        return self.rng.uniform(low=0, high=1, size=img.shape)

    def _augment(self, img: np.ndarray, param: Any) -> np.ndarray:
        img[param > (1 - self.white_prob)] = 255
        img[param < self.black_prob] = 0
        return img
