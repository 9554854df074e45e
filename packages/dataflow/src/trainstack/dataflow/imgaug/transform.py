"""Transforms: the deterministic changes an augmentor decides on, applied with ``apply_image``
to images and ``apply_coords`` to Nx2 arrays of (x, y) coordinates (tensorpack 0.11's design).
They may change their input in place."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ._cv2 import BORDER_CONSTANT, INTER_LINEAR, cv2
from .base import ImageAugmentor, _default_repr

__all__ = ["BaseTransform", "Transform", "ResizeTransform", "CropTransform", "WarpAffineTransform",
           "FlipTransform", "TransposeTransform", "NoOpTransform", "PhotometricTransform",
           "TransformFactory", "TransformList", "LazyTransform", "TransformAugmentorBase"]

TransformAugmentorBase = ImageAugmentor
"""tensorpack's legacy alias of :class:`ImageAugmentor`."""


class BaseTransform:
    """Base class of every transform (for ``isinstance`` checks)."""

    def _init(self, params: dict[str, Any] | None = None) -> None:
        if params:
            for k, v in params.items():
                if k != "self" and not k.startswith("_"):
                    setattr(self, k, v)


class Transform(BaseTransform):
    """A deterministic change of an image. Subclasses implement ``apply_image`` and, where
    coordinates move, ``apply_coords``; any other ``apply_xxx`` raises NotImplementedError."""

    def __init__(self) -> None:
        pass

    def __getattr__(self, name: str) -> Any:
        if name.startswith("apply_"):
            def f(x: Any) -> Any:
                raise NotImplementedError(f"{type(self).__name__} does not implement method {name}")
            return f
        raise AttributeError(f"{type(self).__name__} object has no attribute {name}")

    def __repr__(self) -> str:
        try:
            return _default_repr(self)
        except ValueError:
            return object.__repr__(self)

    __str__ = __repr__


def _keep_channel_axis(img: np.ndarray, ret: np.ndarray) -> np.ndarray:
    # OpenCV drops a trailing axis of size 1
    return ret[:, :, np.newaxis] if img.ndim == 3 and ret.ndim == 2 else ret


class ResizeTransform(Transform):
    """Resize an (h, w) image to (new_h, new_w) with OpenCV interpolation ``interp``."""

    h: int
    w: int
    new_h: int
    new_w: int
    interp: int

    def __init__(self, h: int, w: int, new_h: int, new_w: int, interp: int) -> None:
        super().__init__()
        self._init(locals())

    def apply_image(self, img: np.ndarray) -> np.ndarray:
        if img.shape[:2] != (self.h, self.w):
            raise ValueError(f"ResizeTransform was made for images of shape ({self.h}, {self.w}), "
                             f"got one of shape {img.shape[:2]}")
        ret = cv2("ResizeTransform").resize(img, (self.new_w, self.new_h), interpolation=self.interp)
        return _keep_channel_axis(img, ret)

    def apply_coords(self, coords: np.ndarray) -> np.ndarray:
        coords[:, 0] = coords[:, 0] * (self.new_w * 1.0 / self.w)
        coords[:, 1] = coords[:, 1] * (self.new_h * 1.0 / self.h)
        return coords


class CropTransform(Transform):
    """Crop the (h, w) sub-image whose top-left corner is (y0, x0)."""

    y0: int
    x0: int
    h: int
    w: int

    def __init__(self, y0: int, x0: int, h: int, w: int) -> None:
        super().__init__()
        self._init(locals())

    def apply_image(self, img: np.ndarray) -> np.ndarray:
        return img[self.y0:self.y0 + self.h, self.x0:self.x0 + self.w]

    def apply_coords(self, coords: np.ndarray) -> np.ndarray:
        coords[:, 0] -= self.x0
        coords[:, 1] -= self.y0
        return coords


class WarpAffineTransform(Transform):
    """``cv2.warpAffine`` with the 2x3 matrix ``mat`` into an image of size ``dsize`` (w, h)."""

    mat: np.ndarray
    dsize: Any
    interp: int
    borderMode: int
    borderValue: Any

    def __init__(self, mat: np.ndarray, dsize: Any, interp: int = INTER_LINEAR,
                 borderMode: int = BORDER_CONSTANT, borderValue: Any = 0) -> None:  # noqa: N803 - tensorpack's
        super().__init__()
        self._init(locals())

    def apply_image(self, img: np.ndarray) -> np.ndarray:
        ret = cv2("WarpAffineTransform").warpAffine(img, self.mat, self.dsize, flags=self.interp,
                                                    borderMode=self.borderMode, borderValue=self.borderValue)
        return _keep_channel_axis(img, ret)

    def apply_coords(self, coords: np.ndarray) -> np.ndarray:
        coords = np.concatenate((coords, np.ones((coords.shape[0], 1), dtype="f4")), axis=1)
        return np.dot(coords, self.mat.T)


class FlipTransform(Transform):
    """Flip an (h, w) image horizontally (``horiz``) or vertically."""

    h: int
    w: int
    horiz: bool

    def __init__(self, h: int, w: int, horiz: bool = True) -> None:
        self._init(locals())

    def apply_image(self, img: np.ndarray) -> np.ndarray:
        return img[:, ::-1] if self.horiz else img[::-1]

    def apply_coords(self, coords: np.ndarray) -> np.ndarray:
        if self.horiz:
            coords[:, 0] = self.w - coords[:, 0]
        else:
            coords[:, 1] = self.h - coords[:, 1]
        return coords


class TransposeTransform(Transform):
    """Swap the image's rows and columns (and x and y)."""

    def apply_image(self, img: np.ndarray) -> np.ndarray:
        return _keep_channel_axis(img, cv2("TransposeTransform").transpose(img))

    def apply_coords(self, coords: np.ndarray) -> np.ndarray:
        return coords[:, ::-1]


class NoOpTransform(Transform):
    """Every ``apply_xxx`` returns its input."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("apply_"):
            return lambda x: x
        raise AttributeError(f"NoOpTransform object has no attribute {name}")


class PhotometricTransform(Transform):
    """``func`` on images; coordinates stay."""

    def __init__(self, func: Callable[[np.ndarray], np.ndarray], name: str | None = None) -> None:
        self._func = func
        self._name = name

    def apply_image(self, img: np.ndarray) -> np.ndarray:
        return self._func(img)

    def apply_coords(self, coords: np.ndarray) -> np.ndarray:
        return coords

    def __repr__(self) -> str:
        return f"imgaug.PhotometricTransform({self._name or ''})"

    __str__ = __repr__


class TransformFactory(Transform):
    """A Transform from functions: ``TransformFactory(apply_image=f, apply_coords=g)``."""

    def __init__(self, name: str | None = None, **kwargs: Callable[[Any], Any]) -> None:
        for k, v in kwargs.items():
            if not k.startswith("apply_"):
                raise KeyError(f"TransformFactory takes apply_xxx=function arguments, got {k!r}")
            setattr(self, k, v)
        self._name = name

    def __repr__(self) -> str:
        return f"imgaug.TransformFactory({self._name or ''})"

    __str__ = __repr__


class TransformList(BaseTransform):
    """The transforms ``tfms`` one after the other."""

    def __init__(self, tfms: list[BaseTransform]) -> None:
        for t in tfms:
            if not isinstance(t, BaseTransform):
                raise TypeError(f"TransformList takes Transforms, got {t!r}")
        self.tfms = tfms

    def _apply(self, x: Any, meth: str) -> Any:
        for t in self.tfms:
            x = getattr(t, meth)(x)
        return x

    def __getattr__(self, name: str) -> Any:
        if name.startswith("apply_"):
            return lambda x: self._apply(x, name)
        raise AttributeError(f"TransformList object has no attribute {name}")

    def __repr__(self) -> str:
        each = ",\n".join("  " + repr(x) for x in self.tfms)
        return f"imgaug.TransformList([\n{each}])"

    __str__ = __repr__

    def __add__(self, other: Any) -> TransformList:
        other = other.tfms if isinstance(other, TransformList) else [other]
        return TransformList(self.tfms + other)

    def __iadd__(self, other: Any) -> TransformList:
        other = other.tfms if isinstance(other, TransformList) else [other]
        self.tfms.extend(other)
        return self

    def __radd__(self, other: Any) -> TransformList:
        other = other.tfms if isinstance(other, TransformList) else [other]
        return TransformList(other + self.tfms)


class LazyTransform(BaseTransform):
    """The Transform ``get_transform(img)`` of the first image it is applied to; other
    ``apply_xxx`` (coordinates) only after that."""

    def __init__(self, get_transform: Callable[[np.ndarray], Any]) -> None:
        self.get_transform = get_transform
        self._transform: Any = None

    def apply_image(self, img: np.ndarray) -> np.ndarray:
        if not self._transform:
            self._transform = self.get_transform(img)
        return self._transform.apply_image(img)

    def _apply(self, x: Any, meth: str) -> Any:
        if self._transform is None:
            raise RuntimeError(f"LazyTransform.{meth} can only be called after the transform has been applied "
                               "to an image (apply_image first: the augmentor needs the image to decide)")
        return getattr(self._transform, meth)(x)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("apply_"):
            return lambda x: self._apply(x, name)
        raise AttributeError(f"LazyTransform object has no attribute {name}")

    def apply_coords(self, coords: np.ndarray) -> np.ndarray:
        return self._apply(coords, "apply_coords")

    def __repr__(self) -> str:
        if self._transform is None:
            return f"LazyTransform(get_transform={self.get_transform})"
        return repr(self._transform)

    __str__ = __repr__
