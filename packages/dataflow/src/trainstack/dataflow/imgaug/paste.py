"""Paste the image onto a larger canvas: :class:`CenterPaste`, :class:`RandomPaste`, and the
:class:`BackgroundFiller` that makes the canvas (tensorpack 0.11's ``paste``).

As in tensorpack, their transforms move only images: ``apply_coords`` raises
NotImplementedError.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .base import ImageAugmentor
from .transform import TransformFactory

__all__ = ["CenterPaste", "BackgroundFiller", "ConstantBackgroundFiller", "RandomPaste"]


class BackgroundFiller:
    """Makes the canvas of (h, w) ``background_shape`` for an image; subclasses implement
    ``_fill(background_shape, img)``."""

    def fill(self, background_shape: Sequence[int], img: np.ndarray) -> np.ndarray:
        """A background of ``background_shape`` (h, w) with the channels and dtype of ``img``."""
        return self._fill(tuple(background_shape), img)

    def _fill(self, background_shape: tuple[int, ...], img: np.ndarray) -> np.ndarray:
        raise NotImplementedError(f"{type(self).__name__} must implement _fill(background_shape, img)")


class ConstantBackgroundFiller(BackgroundFiller):
    """A canvas of the constant ``value``."""

    def __init__(self, value: float) -> None:
        self.value = value

    def _fill(self, background_shape: tuple[int, ...], img: np.ndarray) -> np.ndarray:
        if img.ndim not in (2, 3):
            raise ValueError(f"ConstantBackgroundFiller takes HxW or HxWxC images, got shape {img.shape}")
        shape = background_shape + (img.shape[2],) if img.ndim == 3 else background_shape
        return np.zeros(shape, dtype=img.dtype) + self.value


def _check_canvas(owner: str, background_shape: Sequence[int], img_shape: Sequence[int], strict: bool) -> None:
    fits = (background_shape[0] > img_shape[0] and background_shape[1] > img_shape[1]) if strict else \
        (background_shape[0] >= img_shape[0] and background_shape[1] >= img_shape[1])
    if not fits:
        bigger = "larger than" if strict else "at least as large as"
        raise ValueError(f"{owner}: the background {tuple(background_shape[:2])} (h, w) must be {bigger} the "
                         f"image, got an image of shape {tuple(img_shape)}")


class CenterPaste(ImageAugmentor):
    """Paste the image at the center of a canvas of (h, w) ``background_shape`` made by
    ``background_filler`` (default: zeros)."""

    background_shape: Sequence[int]
    background_filler: Any

    def __init__(self, background_shape: Sequence[int], background_filler: BackgroundFiller | None = None) -> None:
        if background_filler is None:
            background_filler = ConstantBackgroundFiller(0)
        self._init(locals())

    def get_transform(self, img: np.ndarray) -> Any:
        return TransformFactory(name=str(self), apply_image=lambda img: self._impl(img))

    def _impl(self, img: np.ndarray) -> np.ndarray:
        img_shape = img.shape[:2]
        _check_canvas(type(self).__name__, self.background_shape, img_shape, strict=False)
        background = self.background_filler.fill(self.background_shape, img)
        y0 = int((self.background_shape[0] - img_shape[0]) * 0.5)
        x0 = int((self.background_shape[1] - img_shape[1]) * 0.5)
        background[y0:y0 + img_shape[0], x0:x0 + img_shape[1]] = img
        return background


class RandomPaste(CenterPaste):
    """Paste the image at a random place of a strictly larger canvas (the row offset drawn
    first, then the column offset, as in tensorpack)."""

    def get_transform(self, img: np.ndarray) -> Any:
        img_shape = img.shape[:2]
        _check_canvas("RandomPaste", self.background_shape, img_shape, strict=True)
        y0 = self._rand_range(self.background_shape[0] - img_shape[0])
        x0 = self._rand_range(self.background_shape[1] - img_shape[1])
        loc = int(x0), int(y0)
        return TransformFactory(name=str(self), apply_image=lambda img: self._impl(img, loc))

    def _impl(self, img: np.ndarray, loc: tuple[int, int] | None = None) -> np.ndarray:
        if loc is None:
            return super()._impl(img)
        x0, y0 = loc
        img_shape = img.shape[:2]
        background = self.background_filler.fill(self.background_shape, img)
        background[y0:y0 + img_shape[0], x0:x0 + img_shape[1]] = img
        return background
