"""Conversions of colour space and dtype: :class:`ColorSpace`, :class:`Grayscale`,
:class:`ToUint8`, :class:`ToFloat32` (tensorpack 0.11's ``convert``; no random draws)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ._cv2 import COLOR_BGR2GRAY, COLOR_RGB2GRAY, cv2
from .base import PhotometricAugmentor

__all__ = ["ColorSpace", "Grayscale", "ToUint8", "ToFloat32"]


def _mode_name(mode: int) -> str:
    """``COLOR_BGR2HSV (40)``: OpenCV's name(s) of a conversion code, for error messages."""
    try:
        cv = cv2("ColorSpace")
    except ImportError:
        return str(mode)
    names = sorted(k for k in dir(cv) if k.startswith("COLOR_") and getattr(cv, k) == mode)
    return f"{'/'.join(names[:3])} ({mode})" if names else str(mode)


class ColorSpace(PhotometricAugmentor):
    """``cv2.cvtColor(img, mode)``; with ``keepdims``, a channel axis OpenCV drops (a
    conversion to one channel) is put back."""

    mode: int
    keepdims: bool

    def __init__(self, mode: int, keepdims: bool = True) -> None:
        super().__init__()
        self._init(locals())

    def _augment(self, img: np.ndarray, _: Any) -> np.ndarray:
        cv = cv2(type(self).__name__)
        try:
            transf = cv.cvtColor(img, self.mode)
        except cv.error as e:
            channels = 1 if img.ndim == 2 else (img.shape[2] if img.ndim == 3 else None)
            detail = str(e).strip().splitlines()[-1] if str(e).strip() else ""
            raise ValueError(
                f"{type(self).__name__}(mode={_mode_name(self.mode)}) cannot convert an image of shape "
                f"{img.shape} ({channels} channel(s)) and dtype {img.dtype}: expected an HxWxC image with "
                f"the number of channels this conversion takes (3 for a conversion from RGB/BGR) and a "
                f"uint8, uint16 or float32 dtype (OpenCV: {detail})") from e
        if self.keepdims and transf.ndim != img.ndim:
            transf = transf[..., None]
        return transf


class Grayscale(ColorSpace):
    """BGR (or RGB with ``rgb``) to grey: HxWx1 with ``keepdims``, HxW without; ``keepshape``
    repeats the grey channel 3 times (HxWx3)."""

    def __init__(self, keepdims: bool = True, rgb: bool = False, keepshape: bool = False) -> None:
        mode = COLOR_RGB2GRAY if rgb else COLOR_BGR2GRAY
        if keepshape and not keepdims:
            raise ValueError("Grayscale(keepshape=True) needs keepdims=True")
        super().__init__(mode, keepdims)
        self.keepshape = keepshape
        self.rgb = rgb

    def _augment(self, img: np.ndarray, _: Any) -> np.ndarray:
        ret = super()._augment(img, _)
        return np.concatenate([ret] * 3, axis=2) if self.keepshape else ret


class ToUint8(PhotometricAugmentor):
    """Clip to [0, 255] and cast to uint8 (4x smaller to send between processes)."""

    def _augment(self, img: np.ndarray, _: Any) -> np.ndarray:
        return np.clip(img, 0, 255).astype(np.uint8)


class ToFloat32(PhotometricAugmentor):
    """Cast to float32 (so the augmentors after it compute without rounding to uint8)."""

    def _augment(self, img: np.ndarray, _: Any) -> np.ndarray:
        return img.astype(np.float32)
