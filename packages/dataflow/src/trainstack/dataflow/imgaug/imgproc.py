"""Photometric augmentors that change pixel values: brightness, contrast, saturation, hue,
lighting noise, gamma, blur, clipping and normalisation (tensorpack 0.11's ``imgproc``).

Each draws its parameters from ``self.rng`` in the order tensorpack does and keeps the input's
dtype unless it says otherwise, so that the same seed gives the same pixels.
"""
from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from ._cv2 import cv2
from .base import PhotometricAugmentor

__all__ = ["Hue", "Brightness", "BrightnessScale", "Contrast", "MeanVarianceNormalize", "GaussianBlur",
           "Gamma", "Clip", "Saturation", "Lighting", "MinMaxNormalize"]


def cvt_color(owner: str, img: np.ndarray, code: int, expected: str) -> np.ndarray:
    """``cv2.cvtColor(img, code)``; a ValueError naming ``owner``, the image and what it
    expected when OpenCV refuses the image (wrong number of channels, unsupported dtype)."""
    cv = cv2(owner)
    try:
        return cv.cvtColor(img, code)
    except cv.error as e:
        detail = str(e).strip().splitlines()[-1] if str(e).strip() else ""
        raise ValueError(f"{owner} cannot convert an image of shape {img.shape} and dtype {img.dtype}: "
                         f"expected {expected} (OpenCV: {detail})") from e


def _clip_back(img: np.ndarray, clip: bool, old_dtype: np.dtype) -> np.ndarray:
    """Clip to [0, 255] when asked or when the input was uint8, then cast back to its dtype."""
    if clip or old_dtype == np.uint8:
        img = np.clip(img, 0, 255)
    return img.astype(old_dtype)


class Hue(PhotometricAugmentor):
    """Add a random hue offset from ``range`` (in OpenCV's half-degrees, so at most
    [-90, 90]) to an RGB (``rgb``) or BGR image, through HSV."""

    range: Sequence[float]
    rgb: Any

    def __init__(self, range: Sequence[float] = (0, 180), rgb: bool = True) -> None:  # noqa: A002 - tensorpack's
        super().__init__()
        rgb = bool(rgb)
        self._init(locals())

    def _get_augment_params(self, img: np.ndarray) -> Any:
        return self._rand_range(*self.range)

    def _augment(self, img: np.ndarray, hue: Any) -> np.ndarray:
        cv = cv2("Hue")
        expected = "an HxWx3 uint8 or float32 RGB/BGR image"
        hsv = cvt_color("Hue", img, cv.COLOR_RGB2HSV if self.rgb else cv.COLOR_BGR2HSV, expected)
        if hsv.dtype.itemsize == 1:  # uint8: H in [0, 180)
            hsv[..., 0] = (hsv[..., 0] + hue) % 180
        else:  # float32: H in [0, 360)
            hsv[..., 0] = (hsv[..., 0] + 2 * hue) % 360
        return cvt_color("Hue", hsv, cv.COLOR_HSV2RGB if self.rgb else cv.COLOR_HSV2BGR, expected)


class Brightness(PhotometricAugmentor):
    """Add a random value from [-delta, delta]; clip to [0, 255] when ``clip`` (always for
    uint8 images)."""

    delta: float
    clip: bool

    def __init__(self, delta: float, clip: bool = True) -> None:
        super().__init__()
        if not delta > 0:
            raise ValueError(f"Brightness(delta=...) must be a positive number, got {delta!r}")
        self._init(locals())

    def _get_augment_params(self, img: np.ndarray) -> Any:
        return self._rand_range(-self.delta, self.delta)

    def _augment(self, img: np.ndarray, v: Any) -> np.ndarray:
        old_dtype = img.dtype
        out = img.astype("float32")
        out += v
        return _clip_back(out, self.clip, old_dtype)


class BrightnessScale(PhotometricAugmentor):
    """Multiply by a random factor from ``range`` (low, high); clip as :class:`Brightness`."""

    range: Sequence[float]
    clip: bool

    def __init__(self, range: Sequence[float], clip: bool = True) -> None:  # noqa: A002 - tensorpack's
        super().__init__()
        self._init(locals())

    def _get_augment_params(self, img: np.ndarray) -> Any:
        return self._rand_range(*self.range)

    def _augment(self, img: np.ndarray, v: Any) -> np.ndarray:
        old_dtype = img.dtype
        out = img.astype("float32")
        out *= v
        return _clip_back(out, self.clip, old_dtype)


class Contrast(PhotometricAugmentor):
    """``x = (x - mean) * r + mean`` with ``r`` drawn from ``factor_range``; the mean is per
    channel (``rgb=None``) or that of the grey image (``rgb`` True/False: RGB/BGR input)."""

    factor_range: Sequence[float]
    rgb: bool | None
    clip: bool

    def __init__(self, factor_range: Sequence[float], rgb: bool | None = None, clip: bool = True) -> None:
        super().__init__()
        self._init(locals())

    def _get_augment_params(self, img: np.ndarray) -> Any:
        return self._rand_range(*self.factor_range)

    def _augment(self, img: np.ndarray, r: Any) -> np.ndarray:
        old_dtype = img.dtype
        if img.ndim == 3:
            if self.rgb is not None:
                cv = cv2("Contrast")
                grey = cvt_color("Contrast", img.astype("float32"),
                                 cv.COLOR_RGB2GRAY if self.rgb else cv.COLOR_BGR2GRAY,
                                 "an HxWx3 RGB/BGR image with rgb=True/False (rgb=None for other images)")
                mean = np.mean(grey)
            else:
                mean = np.mean(img, axis=(0, 1), keepdims=True)
        else:
            mean = np.mean(img)
        out = img * r + mean * (1 - r)
        return _clip_back(out, self.clip, old_dtype)


class MeanVarianceNormalize(PhotometricAugmentor):
    """``(x - mean) / max(std, 1 / sqrt(x.size))`` over all channels (``all_channel``) or per
    channel; always returns float32."""

    all_channel: bool

    def __init__(self, all_channel: bool = True) -> None:
        self._init(locals())

    def _augment(self, img: np.ndarray, _: Any) -> np.ndarray:
        img = img.astype("float32")
        if self.all_channel:
            mean, std = np.mean(img), np.std(img)
        else:
            mean = np.mean(img, axis=(0, 1), keepdims=True)
            std = np.std(img, axis=(0, 1), keepdims=True)
        std = np.maximum(std, 1.0 / np.sqrt(np.prod(img.shape)))
        return (img - mean) / std


class GaussianBlur(PhotometricAugmentor):
    """Gaussian blur with a random window of ``2 * size + 1`` pixels, ``size`` drawn from
    [low, high) of ``size_range`` (an int n: [0, n)), and a sigma drawn from ``sigma_range``
    (0: OpenCV's default for the window); the same for x and y when ``symmetric``.
    ``max_size`` is tensorpack's deprecated spelling of ``size_range=(0, max_size)``."""

    size_range: Any
    sigma_range: Sequence[float]
    symmetric: bool

    def __init__(self, size_range: Any = (0, 3), sigma_range: Sequence[float] = (0, 0), symmetric: bool = True,
                 max_size: int | None = None) -> None:
        super().__init__()
        if not isinstance(size_range, (list, tuple)):
            size_range = (0, size_range)
        if not isinstance(sigma_range, (list, tuple)):
            raise TypeError(f"GaussianBlur(sigma_range=...) must be a (min, max) list or tuple, got {sigma_range!r}")
        if max_size is not None:
            warnings.warn("GaussianBlur(max_size=) is deprecated: use size_range=(0, max_size)",
                          DeprecationWarning, stacklevel=2)
            size_range = (0, max_size)
        self._init(locals())

    def _get_augment_params(self, img: np.ndarray) -> Any:
        size_xy = self.rng.randint(self.size_range[0], self.size_range[1], size=(2,)) * 2 + 1
        sigma_xy = self._rand_range(*self.sigma_range, size=(2,))  # type: ignore[misc]  # (low, high)
        if self.symmetric:
            size_xy[1] = size_xy[0]
            sigma_xy[1] = sigma_xy[0]
        return tuple(size_xy), tuple(sigma_xy)

    def _augment(self, img: np.ndarray, prm: Any) -> np.ndarray:
        size, sigma = prm
        cv = cv2("GaussianBlur")
        out = cv.GaussianBlur(img, size, sigmaX=sigma[0], sigmaY=sigma[1], borderType=cv.BORDER_REPLICATE)
        return np.reshape(out, img.shape)


class Gamma(PhotometricAugmentor):
    """Gamma correction ``255 * (x / 255) ** (1 / (1 + g))`` with ``g`` drawn from ``range``,
    through a uint8 lookup table (so the input is clipped to [0, 255] and rounded down first);
    the result has the input's dtype."""

    range: Sequence[float]

    def __init__(self, range: Sequence[float] = (-0.5, 0.5)) -> None:  # noqa: A002 - tensorpack's
        super().__init__()
        self._init(locals())

    def _get_augment_params(self, img: np.ndarray) -> Any:
        return self._rand_range(*self.range)

    def _augment(self, img: np.ndarray, gamma: Any) -> np.ndarray:
        old_dtype = img.dtype
        lut = ((np.arange(256, dtype="float32") / 255) ** (1. / (1. + gamma)) * 255).astype("uint8")
        img = np.clip(img, 0, 255).astype("uint8")
        ret = cv2("Gamma").LUT(img, lut).astype(old_dtype)
        if img.ndim == 3 and ret.ndim == 2:
            ret = ret[:, :, np.newaxis]
        return ret


class Clip(PhotometricAugmentor):
    """Clip pixel values to [min, max]."""

    min: float
    max: float

    def __init__(self, min: float = 0, max: float = 255) -> None:  # noqa: A002 - tensorpack's
        self._init(locals())

    def _augment(self, img: np.ndarray, _: Any) -> np.ndarray:
        return np.clip(img, self.min, self.max)


class Saturation(PhotometricAugmentor):
    """Blend with the grey image by a random factor ``1 + u``, ``u`` in [-alpha, alpha]
    (fb.resnet.torch's saturation jitter) for an HxWx3 RGB (``rgb``) or BGR image."""

    alpha: float
    rgb: Any
    clip: bool

    def __init__(self, alpha: float = 0.4, rgb: bool = True, clip: bool = True) -> None:
        super().__init__()
        rgb = bool(rgb)
        if not alpha < 1:
            raise ValueError(f"Saturation(alpha=...) must be < 1, got {alpha!r}")
        self._init(locals())

    def _get_augment_params(self, img: np.ndarray) -> Any:
        return 1 + self._rand_range(-self.alpha, self.alpha)

    def _augment(self, img: np.ndarray, v: Any) -> np.ndarray:
        old_dtype = img.dtype
        cv = cv2("Saturation")
        grey = cvt_color("Saturation", img, cv.COLOR_RGB2GRAY if self.rgb else cv.COLOR_BGR2GRAY,
                         "an HxWx3 uint8 or float32 RGB/BGR image")
        ret = img * v + (grey * (1 - v))[:, :, np.newaxis]
        return _clip_back(ret, self.clip, old_dtype)


class Lighting(PhotometricAugmentor):
    """AlexNet's PCA lighting noise (as in fb.resnet.torch): add ``eigvec @ (a * eigval)`` to
    every pixel, ``a`` ~ N(0, std^2) per component; ``eigval`` (3,) and ``eigvec`` 3x3 (one
    eigenvector per column) describe the dataset's colours."""

    std: float
    eigval: Any
    eigvec: Any
    clip: bool

    def __init__(self, std: float, eigval: Any, eigvec: Any, clip: bool = True) -> None:
        super().__init__()
        eigval = np.asarray(eigval, dtype="float32")
        eigvec = np.asarray(eigvec, dtype="float32")
        if eigval.shape != (3,):
            raise ValueError(f"Lighting(eigval=...) must have shape (3,), got {eigval.shape}")
        if eigvec.shape != (3, 3):
            raise ValueError(f"Lighting(eigvec=...) must have shape (3, 3), got {eigvec.shape}")
        self._init(locals())

    def _get_augment_params(self, img: np.ndarray) -> Any:
        if img.ndim != 3 or img.shape[2] != 3:
            raise ValueError(f"Lighting needs an HxWx3 image, got one of shape {img.shape}")
        return (self.rng.randn(3) * self.std).astype("float32")

    def _augment(self, img: np.ndarray, v: Any) -> np.ndarray:
        old_dtype = img.dtype
        v = (v * self.eigval).reshape((3, 1))
        inc = np.dot(self.eigvec, v).reshape((3,))
        return _clip_back(np.add(img, inc), self.clip, old_dtype)


class MinMaxNormalize(PhotometricAugmentor):
    """Scale linearly to [min, max], over all channels (``all_channel``) or per channel;
    always returns float32."""

    min: float
    max: float
    all_channel: bool

    def __init__(self, min: float = 0, max: float = 255, all_channel: bool = True) -> None:  # noqa: A002
        self._init(locals())

    def _augment(self, img: np.ndarray, _: Any) -> np.ndarray:
        img = img.astype("float32")
        if self.all_channel:
            minimum, maximum = np.min(img), np.max(img)
        else:
            minimum = np.min(img, axis=(0, 1), keepdims=True)
            maximum = np.max(img, axis=(0, 1), keepdims=True)
        return (self.max - self.min) * (img - minimum) / (maximum - minimum) + self.min
