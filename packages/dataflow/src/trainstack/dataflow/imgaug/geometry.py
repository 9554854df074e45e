"""Affine warps: :class:`Shift`, :class:`Rotation`, :class:`RotationAndCropValid`, :class:`Affine`
(``cv2.warpAffine``; coordinates go through the same matrix)."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._cv2 import BORDER_REPLICATE, INTER_LINEAR, cv2
from .base import ImageAugmentor
from .transform import CropTransform, TransformList, WarpAffineTransform

__all__ = ["Shift", "Rotation", "RotationAndCropValid", "Affine"]


def _check_step(owner: str, max_deg: float, step_deg: float | None) -> None:
    if step_deg is not None and not (max_deg == 180 and max_deg % step_deg == 0):
        raise ValueError(f"{owner}(step_deg={step_deg}) needs max_deg=180 (got {max_deg}) and a step that divides 180")


class Shift(ImageAugmentor):
    """Shift by a random whole number of pixels, up to ``horiz_frac`` of the width and
    ``vert_frac`` of the height."""

    horiz_frac: float
    vert_frac: float
    border: int
    border_value: Any

    def __init__(self, horiz_frac: float = 0, vert_frac: float = 0, border: int = BORDER_REPLICATE,
                 border_value: Any = 0) -> None:
        if not (horiz_frac < 1.0 and vert_frac < 1.0):
            raise ValueError(f"Shift: horiz_frac and vert_frac must be < 1, got {horiz_frac}, {vert_frac}")
        super().__init__()
        self._init(locals())

    def get_transform(self, img: np.ndarray) -> Any:
        max_dx = self.horiz_frac * img.shape[1]
        max_dy = self.vert_frac * img.shape[0]
        dx = np.round(self._rand_range(-max_dx, max_dx))
        dy = np.round(self._rand_range(-max_dy, max_dy))
        mat = np.array([[1, 0, dx], [0, 1, dy]], dtype="float32")
        return WarpAffineTransform(mat, img.shape[1::-1], borderMode=self.border, borderValue=self.border_value)


class Rotation(ImageAugmentor):
    """Rotate by a random angle in [-max_deg, max_deg] (a multiple of ``step_deg`` when given)
    around a random center (fractions of the size in ``center_range``)."""

    max_deg: float
    center_range: tuple[float, float]
    interp: int
    border: int
    step_deg: float | None
    border_value: Any

    def __init__(self, max_deg: float, center_range: tuple[float, float] = (0, 1), interp: int = INTER_LINEAR,
                 border: int = BORDER_REPLICATE, step_deg: float | None = None, border_value: Any = 0) -> None:
        _check_step("Rotation", max_deg, step_deg)
        super().__init__()
        self._init(locals())

    def get_transform(self, img: np.ndarray) -> Any:
        center = img.shape[1::-1] * self._rand_range(self.center_range[0], self.center_range[1], (2,))
        deg = self._rand_range(-self.max_deg, self.max_deg)
        if self.step_deg:
            deg = deg // self.step_deg * self.step_deg
        # the center of rotation in pixel coordinates is shape * 0.5 - 0.5
        mat = cv2("Rotation").getRotationMatrix2D(tuple(center - 0.5), float(deg), 1)
        return WarpAffineTransform(mat, img.shape[1::-1], interp=self.interp, borderMode=self.border,
                                   borderValue=self.border_value)


class RotationAndCropValid(ImageAugmentor):
    """Rotate around the center, then crop the largest rectangle without border (so the
    output shapes vary)."""

    max_deg: float
    interp: int
    step_deg: float | None

    def __init__(self, max_deg: float, interp: int = INTER_LINEAR, step_deg: float | None = None) -> None:
        _check_step("RotationAndCropValid", max_deg, step_deg)
        super().__init__()
        self._init(locals())

    def _get_deg(self, img: np.ndarray) -> float:
        deg = self._rand_range(-self.max_deg, self.max_deg)
        if self.step_deg:
            deg = deg // self.step_deg * self.step_deg
        return float(deg)

    def get_transform(self, img: np.ndarray) -> Any:
        deg = self._get_deg(img)
        h, w = img.shape[:2]
        center = (img.shape[1] * 0.5, img.shape[0] * 0.5)
        rot_m = cv2("RotationAndCropValid").getRotationMatrix2D((center[0] - 0.5, center[1] - 0.5), deg, 1)
        tfm = WarpAffineTransform(rot_m, (w, h), interp=self.interp)
        neww, newh = RotationAndCropValid.largest_rotated_rect(w, h, deg)
        neww = min(neww, w)
        newh = min(newh, h)
        newx = int(center[0] - neww * 0.5)
        newy = int(center[1] - newh * 0.5)
        return TransformList([tfm, CropTransform(newy, newx, newh, neww)])

    @staticmethod
    def largest_rotated_rect(w: int, h: int, angle: float) -> tuple[int, int]:
        """The largest (w, h) rectangle inside a w x h one rotated by ``angle`` degrees."""
        angle = angle / 180.0 * math.pi
        if w <= 0 or h <= 0:
            return 0, 0
        width_is_longer = w >= h
        side_long, side_short = (w, h) if width_is_longer else (h, w)
        sin_a, cos_a = abs(math.sin(angle)), abs(math.cos(angle))
        if side_short <= 2. * sin_a * cos_a * side_long:
            x = 0.5 * side_short
            wr, hr = (x / sin_a, x / cos_a) if width_is_longer else (x / cos_a, x / sin_a)
        else:
            cos_2a = cos_a * cos_a - sin_a * sin_a
            wr, hr = (w * cos_a - h * sin_a) / cos_2a, (h * cos_a - w * sin_a) / cos_2a
        return int(np.round(wr)), int(np.round(hr))


class Affine(ImageAugmentor):
    """A random affine warp around the image center: scale in ``scale`` (a, b), translation up
    to ``translate_frac`` (x, y) of the size, rotation up to ``rotate_max_deg``, shear up to
    ``shear`` degrees. Draws in that order."""

    scale: tuple[float, float] | None
    translate_frac: tuple[float, float] | None
    rotate_max_deg: float
    shear: float
    interp: int
    border: int
    border_value: Any

    def __init__(self, scale: tuple[float, float] | None = None, translate_frac: tuple[float, float] | None = None,
                 rotate_max_deg: float = 0.0, shear: float = 0.0, interp: int = INTER_LINEAR,
                 border: int = BORDER_REPLICATE, border_value: Any = 0) -> None:
        if scale is not None and not (isinstance(scale, tuple) and len(scale) == 2):
            raise ValueError(f"Affine(scale=...) must be a tuple of two floats (a, b), got {scale!r}")
        if translate_frac is not None and not (isinstance(translate_frac, tuple) and len(translate_frac) == 2):
            raise ValueError(f"Affine(translate_frac=...) must be a tuple of two floats (a, b), got {translate_frac!r}")
        if not shear >= 0.0:
            raise ValueError(f"Affine(shear=...) must be between 0 and 180 degrees, got {shear!r}")
        super().__init__()
        self._init(locals())

    def get_transform(self, img: np.ndarray) -> Any:
        scale = self._rand_range(self.scale[0], self.scale[1]) if self.scale is not None else 1.0
        if self.translate_frac is not None:
            max_dx = self.translate_frac[0] * img.shape[1]
            max_dy = self.translate_frac[1] * img.shape[0]
            dx = np.round(self._rand_range(-max_dx, max_dx))
            dy = np.round(self._rand_range(-max_dy, max_dy))
        else:
            dx = dy = 0
        if self.shear > 0.0:
            shear = self._rand_range(-self.shear, self.shear)
            sin_shear = math.sin(math.radians(shear))
            cos_shear = math.cos(math.radians(shear))
        else:
            sin_shear, cos_shear = 0.0, 1.0
        center = (np.array(img.shape[1::-1]) * np.array((0.5, 0.5))) - 0.5
        deg = self._rand_range(-self.rotate_max_deg, self.rotate_max_deg)
        # float(): OpenCV 5 refuses 0-d arrays as numbers (the float32 values convert exactly)
        m = cv2("Affine").getRotationMatrix2D(tuple(center), float(deg), float(scale))
        if self.shear > 0.0:
            m00, m01, m10, m11 = m[0, 0], m[0, 1], m[1, 0], m[1, 1]
            m[0, 1] = m01 * cos_shear + m00 * sin_shear
            m[1, 1] = m11 * cos_shear + m10 * sin_shear
            # keep the center where it is
            m[0, 2] = center[0] * (1.0 - m00) - center[1] * m[0, 1]
            m[1, 2] = -center[0] * m10 + center[1] * (1.0 - m[1, 1])
        m[0, 2] += dx
        m[1, 2] += dy
        return WarpAffineTransform(m, img.shape[1::-1], self.interp, self.border, self.border_value)
