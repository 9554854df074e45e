"""Crops: :class:`RandomCrop`, :class:`CenterCrop`, :class:`RandomCropRandomShape`,
:class:`GoogleNetRandomCropAndResize`, and :class:`RandomCutout` (which fills a rectangle)."""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ._cv2 import INTER_LINEAR
from .base import ImageAugmentor, ImagePlaceholder, shape2d
from .misc import ResizeShortestEdge
from .transform import CropTransform, PhotometricTransform, ResizeTransform, TransformList

__all__ = ["RandomCrop", "CenterCrop", "RandomCropRandomShape", "GoogleNetRandomCropAndResize", "RandomCutout"]


def _check_fits(owner: str, shape: Any, crop_shape: Any) -> None:
    if shape[0] < crop_shape[0] or shape[1] < crop_shape[1]:
        raise ValueError(f"{owner}: cannot crop {tuple(crop_shape)} (h, w) out of an image of shape {tuple(shape)}")


class RandomCrop(ImageAugmentor):
    """Crop ``crop_shape`` ((h, w) or an int) at a random place: ``rng.randint`` for y, then x."""

    crop_shape: Any

    def __init__(self, crop_shape: Any) -> None:
        crop_shape = shape2d("RandomCrop", "crop_shape", crop_shape)
        crop_shape = (int(crop_shape[0]), int(crop_shape[1]))
        super().__init__()
        self._init(locals())

    def get_transform(self, img: np.ndarray) -> Any:
        orig_shape = img.shape
        _check_fits("RandomCrop", orig_shape, self.crop_shape)
        h0 = self.rng.randint(orig_shape[0] - self.crop_shape[0] + 1)
        w0 = self.rng.randint(orig_shape[1] - self.crop_shape[1] + 1)
        return CropTransform(h0, w0, self.crop_shape[0], self.crop_shape[1])


class CenterCrop(ImageAugmentor):
    """Crop ``crop_shape`` ((h, w) or an int) at the center."""

    crop_shape: Any

    def __init__(self, crop_shape: Any) -> None:
        crop_shape = shape2d("CenterCrop", "crop_shape", crop_shape)
        self._init(locals())

    def get_transform(self, img: Any) -> Any:
        orig_shape = img.shape
        _check_fits("CenterCrop", orig_shape, self.crop_shape)
        h0 = int((orig_shape[0] - self.crop_shape[0]) * 0.5)
        w0 = int((orig_shape[1] - self.crop_shape[1]) * 0.5)
        return CropTransform(h0, w0, self.crop_shape[0], self.crop_shape[1])


class RandomCropRandomShape(ImageAugmentor):
    """Crop a random (h, w) from [hmin, hmax] x [wmin, wmax] (max None: the image's) at a
    random place."""

    wmin: int
    hmin: int
    wmax: int | None
    hmax: int | None

    def __init__(self, wmin: int, hmin: int, wmax: int | None = None, hmax: int | None = None,
                 max_aspect_ratio: float | None = None) -> None:
        super().__init__()
        if max_aspect_ratio is not None:
            warnings.warn("RandomCropRandomShape(max_aspect_ratio=) has no effect (tensorpack never implemented it)",
                          DeprecationWarning, stacklevel=2)
        self._init(locals())

    def get_transform(self, img: np.ndarray) -> Any:
        hmax = self.hmax or img.shape[0]
        wmax = self.wmax or img.shape[1]
        if self.hmin > hmax or self.wmin > wmax:
            raise ValueError(f"RandomCropRandomShape: the shape range (hmin, wmin)=({self.hmin}, {self.wmin}) to "
                             f"(hmax, wmax)=({hmax}, {wmax}) is empty for an image of shape {img.shape} "
                             "(max None: the image's size)")
        h = self.rng.randint(self.hmin, hmax + 1)
        w = self.rng.randint(self.wmin, wmax + 1)
        diffh = img.shape[0] - h
        diffw = img.shape[1] - w
        _check_fits("RandomCropRandomShape", img.shape, (h, w))
        y0 = 0 if diffh == 0 else self.rng.randint(diffh)
        x0 = 0 if diffw == 0 else self.rng.randint(diffw)
        return CropTransform(y0, x0, h, w)


class GoogleNetRandomCropAndResize(ImageAugmentor):
    """The Inception crop ("Going Deeper with Convolutions", as in fb.resnet.torch): a random
    crop of 8%-100% of the area and aspect ratio 3/4-4/3, resized to ``target_shape`` squared;
    after 10 failed draws, ResizeShortestEdge and CenterCrop."""

    crop_area_fraction: tuple[float, float]
    aspect_ratio_range: tuple[float, float]
    target_shape: int
    interp: int

    def __init__(self, crop_area_fraction: tuple[float, float] = (0.08, 1.),
                 aspect_ratio_range: tuple[float, float] = (0.75, 1.333),
                 target_shape: int = 224, interp: int = INTER_LINEAR) -> None:
        super().__init__()
        self._init(locals())

    def get_transform(self, img: np.ndarray) -> Any:
        h, w = img.shape[:2]
        area = h * w
        for _ in range(10):
            target_area = self.rng.uniform(*self.crop_area_fraction) * area
            aspect_r = self.rng.uniform(*self.aspect_ratio_range)
            ww = int(np.sqrt(target_area * aspect_r) + 0.5)
            hh = int(np.sqrt(target_area / aspect_r) + 0.5)
            if self.rng.uniform() < 0.5:
                ww, hh = hh, ww
            if hh <= h and ww <= w:
                x1 = self.rng.randint(0, w - ww + 1)
                y1 = self.rng.randint(0, h - hh + 1)
                return TransformList([
                    CropTransform(y1, x1, hh, ww),
                    ResizeTransform(hh, ww, self.target_shape, self.target_shape, interp=self.interp),
                ])
        resize = ResizeShortestEdge(self.target_shape, interp=self.interp).get_transform(img)
        out_shape = (resize.new_h, resize.new_w)
        crop = CenterCrop(self.target_shape).get_transform(ImagePlaceholder(shape=out_shape))
        return TransformList([resize, crop])


class RandomCutout(ImageAugmentor):
    """Cutout (arXiv 1708.04552): fill a random rectangle with ``fill``; its height and width
    are ints, or drawn from [low, high) ranges (a range fails in tensorpack 0.11, which draws
    ``randint(range)``; trainstack draws ``randint(low, high)``)."""

    h_range: Any
    w_range: Any
    fill: float

    def __init__(self, h_range: Any, w_range: Any, fill: float = 0.) -> None:
        super().__init__()
        self._init(locals())

    def _get_cutout_shape(self) -> tuple[int, int]:
        h = self.h_range if isinstance(self.h_range, int) else self.rng.randint(*self.h_range)
        w = self.w_range if isinstance(self.w_range, int) else self.rng.randint(*self.w_range)
        return h, w

    @staticmethod
    def _cutout(img: np.ndarray, y0: int, x0: int, h: int, w: int, fill: float) -> np.ndarray:
        img[y0:y0 + h, x0:x0 + w] = fill
        return img

    def get_transform(self, img: np.ndarray) -> Any:
        h, w = self._get_cutout_shape()
        x0 = self.rng.randint(0, img.shape[1] + 1 - w)
        y0 = self.rng.randint(0, img.shape[0] + 1 - h)
        return PhotometricTransform(lambda img: RandomCutout._cutout(img, y0, x0, h, w, self.fill), "cutout")
