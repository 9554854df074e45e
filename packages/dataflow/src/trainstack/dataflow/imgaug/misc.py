"""Flips and resizes: :class:`Flip`, :class:`Resize`, :class:`ResizeShortestEdge`,
:class:`RandomResize`, :class:`Transpose`."""
from __future__ import annotations

import logging
from typing import Any

import numpy as np

from trainstack.loop.checks import check_int

from ._cv2 import INTER_LINEAR
from .base import ImageAugmentor, shape2d
from .transform import FlipTransform, NoOpTransform, ResizeTransform, TransposeTransform

__all__ = ["Flip", "Resize", "RandomResize", "ResizeShortestEdge", "Transpose"]

logger = logging.getLogger("trainstack.dataflow")


class Flip(ImageAugmentor):
    """Flip horizontally (``horiz``) or vertically (``vert``) with probability ``prob``."""

    horiz: bool
    prob: float

    def __init__(self, horiz: bool = False, vert: bool = False, prob: float = 0.5) -> None:
        super().__init__()
        if horiz and vert:
            raise ValueError("Flip cannot do both horiz and vert: use two Flip instead")
        if not horiz and not vert:
            raise ValueError("Flip needs one of horiz=True or vert=True")
        self._init(locals())

    def get_transform(self, img: np.ndarray) -> Any:
        h, w = img.shape[:2]
        do = self._rand_range() < self.prob
        if not do:
            return NoOpTransform()
        return FlipTransform(h, w, self.horiz)


class Resize(ImageAugmentor):
    """Resize to ``shape`` ((h, w), or an int for a square) with OpenCV interpolation ``interp``."""

    shape: Any
    interp: int

    def __init__(self, shape: Any, interp: int = INTER_LINEAR) -> None:
        shape = tuple(shape2d("Resize", "shape", shape))
        self._init(locals())

    def get_transform(self, img: np.ndarray) -> Any:
        return ResizeTransform(img.shape[0], img.shape[1], self.shape[0], self.shape[1], self.interp)


class ResizeShortestEdge(ImageAugmentor):
    """Resize so that the shorter side is ``size``, keeping the aspect ratio."""

    size: Any
    interp: int

    def __init__(self, size: int, interp: int = INTER_LINEAR) -> None:
        size = check_int("ResizeShortestEdge", "size", int(size) if isinstance(size, float) else size, minimum=1)
        self._init(locals())

    def get_transform(self, img: np.ndarray) -> Any:
        h, w = img.shape[:2]
        scale = self.size * 1.0 / min(h, w)
        if h < w:
            newh, neww = self.size, int(scale * w + 0.5)
        else:
            newh, neww = int(scale * h + 0.5), self.size
        return ResizeTransform(h, w, newh, neww, self.interp)


class RandomResize(ImageAugmentor):
    """Resize to a random width and height: ``xrange``/``yrange`` are (min, max) scale factors
    (floats) or sizes in pixels (ints); ``minimum`` (x, y) pixels; a draw that changes the
    aspect ratio by ``aspect_ratio_thres`` or more is drawn again (up to 50 times; 0 keeps it)."""

    xrange: Any
    yrange: Any
    minimum: Any
    aspect_ratio_thres: float
    interp: int

    def __init__(self, xrange: Any, yrange: Any = None, minimum: Any = (0, 0), aspect_ratio_thres: float = 0.15,
                 interp: int = INTER_LINEAR) -> None:
        super().__init__()
        if aspect_ratio_thres < 0:
            raise ValueError(f"RandomResize(aspect_ratio_thres=...) must be >= 0, got {aspect_ratio_thres}")
        self._init(locals())

        def is_float(tp: Any) -> bool:
            return isinstance(tp[0], float) or isinstance(tp[1], float)

        if yrange is not None and is_float(xrange) != is_float(yrange):
            raise ValueError(f"RandomResize: xrange {xrange} and yrange {yrange} must both be scale factors "
                             "(floats) or both sizes (ints)")
        if yrange is None and aspect_ratio_thres != 0:
            raise ValueError("RandomResize needs yrange unless aspect_ratio_thres=0")
        self._is_scale = is_float(xrange)
        if aspect_ratio_thres == 0:
            if self._is_scale:
                if not (xrange == yrange or yrange is None):
                    raise ValueError("RandomResize(aspect_ratio_thres=0) with scale factors takes yrange=None "
                                     "or yrange == xrange")
            elif yrange is not None:
                logger.warning("RandomResize: aspect_ratio_thres==0, yrange is not used")

    def get_transform(self, img: np.ndarray) -> Any:
        cnt = 0
        h, w = img.shape[:2]

        def get_dest_size() -> tuple[int, int]:
            if self._is_scale:
                sx = self._rand_range(*self.xrange)
                sy = sx if self.aspect_ratio_thres == 0 else self._rand_range(*self.yrange)
                dest_x = max(sx * w, self.minimum[0])
                dest_y = max(sy * h, self.minimum[1])
            else:
                sx = self._rand_range(*self.xrange)
                sy = sx * 1.0 / w * h if self.aspect_ratio_thres == 0 else self._rand_range(*self.yrange)
                dest_x = max(sx, self.minimum[0])
                dest_y = max(sy, self.minimum[1])
            return int(dest_x + 0.5), int(dest_y + 0.5)

        while True:
            dest_x, dest_y = get_dest_size()
            if self.aspect_ratio_thres > 0:
                oldr = w * 1.0 / h
                newr = dest_x * 1.0 / dest_y
                diff = abs(newr - oldr) / oldr
                if diff >= self.aspect_ratio_thres + 1e-5:
                    cnt += 1
                    if cnt > 50:
                        logger.warning("RandomResize failed to augment an image")
                        return ResizeTransform(h, w, h, w, self.interp)
                    continue
            return ResizeTransform(h, w, dest_y, dest_x, self.interp)


class Transpose(ImageAugmentor):
    """Transpose (swap rows and columns) with probability ``prob``."""

    def __init__(self, prob: float = 0.5) -> None:
        super().__init__()
        self.prob = prob

    def get_transform(self, img: np.ndarray) -> Any:
        if self.rng.rand() < self.prob:
            return TransposeTransform()
        return NoOpTransform()
