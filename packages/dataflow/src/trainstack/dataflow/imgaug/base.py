"""The augmentor base classes: :class:`ImageAugmentor` (alias ``Augmentor``),
:class:`PhotometricAugmentor` and :class:`AugmentorList`, tensorpack 0.11's design.

An augmentor draws its random parameters from ``self.rng`` in :meth:`ImageAugmentor.get_transform`
and returns a deterministic :class:`~.transform.Transform`, which then applies the same
change to the image, to other images of the datapoint and to coordinates.

Augmentors written before that design (``_get_augment_params`` / ``_augment`` /
``_augment_coords``, called through ``augment_return_params`` / ``augment_with_params`` /
``augment_coords``) still run: the default ``get_transform`` wraps them, as tensorpack does.

Random numbers: ``self.rng`` is made by :meth:`ImageAugmentor.reset_state` from
:func:`~trainstack.dataflow.get_rng`. It belongs to the process that made it: an augmentor
used in another process (a spawned worker that unpickled it, or a forked child) calls
``reset_state()`` again before its first draw there, so every worker draws its own stream
(tensorpack reseeds after ``fork``; trainstack's workers are spawned).
"""
from __future__ import annotations

import inspect
import os
import pprint
from collections import namedtuple
from collections.abc import Sequence
from typing import Any

import numpy as np

from trainstack.loop.checks import check_pair

from ..base import get_rng

__all__ = ["Augmentor", "ImageAugmentor", "AugmentorList", "PhotometricAugmentor", "ImagePlaceholder"]

ImagePlaceholder = namedtuple("ImagePlaceholder", ["shape"])
ImagePlaceholder.__doc__ = "Stands for an image of ``shape`` where only its shape is needed."


def check_dtype(img: Any) -> None:
    """Refuse what is not a NumPy array (augmentors take uint8 images in [0, 255], or float
    images in [0, 1] or [0, 255]; like tensorpack, other dtypes are passed through)."""
    if not isinstance(img, np.ndarray):
        raise TypeError(f"an augmentor needs an image as a numpy array, got a {type(img).__name__}")


def validate_coords(coords: Any) -> None:
    """Coordinates are an Nx2 floating-point array of (x, y) rows."""
    if not isinstance(coords, np.ndarray) or coords.ndim != 2 or coords.shape[1] != 2 \
            or not np.issubdtype(coords.dtype, np.floating):
        got = (f"shape {coords.shape}, dtype {coords.dtype}" if isinstance(coords, np.ndarray)
               else type(coords).__name__)
        raise ValueError(f"coordinates must be an Nx2 floating-point numpy array of (x, y) rows, got {got}")


def shape2d(owner: str, arg: str, a: Any) -> list[int]:
    """``[a, a]`` for an int, ``list(a)`` for a pair of ints: a positive (h, w) shape."""
    return check_pair(owner, arg, a, minimum=1)


def _default_repr(self: Any) -> str:
    """``imgaug.Name(arg=value, ...)`` from the constructor's arguments that differ from their
    defaults; ValueError when the instance lacks an attribute named after an argument."""
    classname = type(self).__name__
    argspec = inspect.getfullargspec(type(self).__init__)
    if argspec.varargs is not None or argspec.varkw is not None:
        raise ValueError(f"the default repr of {classname} does not work with *args or **kwargs")
    fields = argspec.args[1:]
    defaults = dict(zip(fields[::-1], (argspec.defaults or ())[::-1]))
    for k in argspec.kwonlyargs:
        fields.append(k)
        if argspec.kwonlydefaults and k in argspec.kwonlydefaults:
            defaults[k] = argspec.kwonlydefaults[k]
    args = []
    for f in fields:
        if not hasattr(self, f):
            raise ValueError(f"{classname} has no attribute {f!r} named after its constructor's argument")
        value = getattr(self, f)
        if f in defaults and value is defaults[f]:
            continue
        args.append(f"{f}={pprint.pformat(value)}")
    return f"imgaug.{classname}({', '.join(args)})"


class ImageAugmentor:
    """Base class of augmentors. Subclasses implement :meth:`get_transform` (draw the random
    parameters from ``self.rng``, return a deterministic Transform); or, in the old style,
    ``_get_augment_params(img)``, ``_augment(img, params)`` and ``_augment_coords(coords, params)``.

    Images are uint8 in [0, 255], or floating point in [0, 1] or [0, 255].
    """

    def __init__(self) -> None:
        self.reset_state()

    def _init(self, params: dict[str, Any] | None = None) -> None:
        """Keep the constructor's arguments as attributes: ``self._init(locals())``."""
        if params:
            for k, v in params.items():
                if k != "self" and not k.startswith("_"):
                    setattr(self, k, v)

    @property
    def rng(self) -> np.random.RandomState:
        """The random generator; made (again) by :meth:`reset_state` on first use in a process."""
        if self.__dict__.get("_rng") is None or self.__dict__.get("_rng_pid") != os.getpid():
            self._rng_pid = os.getpid()
            self.reset_state()
            if self.__dict__.get("_rng") is None:  # a reset_state that does not make self.rng
                self.rng = get_rng(self)
        return self._rng

    @rng.setter
    def rng(self, value: np.random.RandomState) -> None:
        self._rng = value
        self._rng_pid = os.getpid()

    def reset_state(self) -> None:
        """Make a new ``self.rng`` (:func:`~trainstack.dataflow.get_rng`: seeded from
        :func:`~trainstack.dataflow.fix_rng_seed`'s seed when one is set), then reset the
        augmentors this one applies (:meth:`_sub_augmentors`). The dataflows that augment
        (``AugmentImageComponent`` ...) call it from their own ``reset_state``."""
        self.rng = get_rng(self)
        for aug in self._sub_augmentors():
            aug.reset_state()

    def _sub_augmentors(self) -> Sequence[ImageAugmentor]:
        """The augmentors this one applies, which :meth:`reset_state` resets with it (none here)."""
        return ()

    def _rand_range(self, low: float = 1.0, high: float | None = None, size: Any = None) -> Any:
        """A float32 drawn uniformly from [low, high) (from [0, low) without ``high``)."""
        if high is None:
            low, high = 0, low
        if size is None:
            size = []
        return self.rng.uniform(low, high, size).astype("float32")

    def __repr__(self) -> str:
        try:
            return _default_repr(self)
        except ValueError:
            return object.__repr__(self)

    __str__ = __repr__

    def get_transform(self, img: np.ndarray) -> Any:
        """The deterministic Transform to apply to ``img`` (its random parameters drawn now).

        This default runs an old-style augmentor: ``_get_augment_params(img)`` (or
        ``get_augment_params``) draws the parameters, ``_augment(img, params)`` applies them,
        ``_augment_coords(coords, params)`` (or ``augment_coords``) moves coordinates, which
        stay where they are when neither exists, as in tensorpack.
        """
        def legacy_augment_coords(coords: np.ndarray, p: Any) -> np.ndarray:
            try:
                return self._augment_coords(coords, p)  # type: ignore[attr-defined]
            except AttributeError:
                pass
            try:
                return self.augment_coords(coords, p)
            except AttributeError:
                pass
            return coords

        p = None
        try:
            p = self._get_augment_params(img)  # type: ignore[attr-defined]
        except AttributeError:
            pass
        try:
            p = self.get_augment_params(img)  # type: ignore[attr-defined]
        except AttributeError:
            pass

        from .transform import BaseTransform, TransformFactory
        if isinstance(p, BaseTransform):  # some old augmentors return a Transform already
            return p
        if not hasattr(self, "_augment"):
            raise NotImplementedError(f"{type(self).__name__} must implement get_transform(img) (or, in the "
                                      "old style, _get_augment_params(img) and _augment(img, params))")
        return TransformFactory(name="LegacyConversion -- " + str(self),
                                apply_image=lambda img: self._augment(img, p),
                                apply_coords=lambda coords: legacy_augment_coords(coords, p))

    def augment(self, img: np.ndarray) -> np.ndarray:
        """``get_transform(img).apply_image(img)``: the augmented image, when nothing else of
        the datapoint needs the same change."""
        check_dtype(img)
        return self.get_transform(img).apply_image(img)

    # the interface before tensorpack 0.10, still used by older scripts
    def augment_return_params(self, d: np.ndarray) -> tuple[np.ndarray, Any]:
        """The augmented image and the Transform (the "params") that made it."""
        t = self.get_transform(d)
        return t.apply_image(d), t

    def augment_with_params(self, d: np.ndarray, param: Any) -> np.ndarray:
        """Apply the Transform ``param`` (from :meth:`augment_return_params`) to another image."""
        return param.apply_image(d)

    def augment_coords(self, coords: np.ndarray, param: Any) -> np.ndarray:
        """Apply the Transform ``param`` (from :meth:`augment_return_params`) to Nx2 (x, y) coordinates."""
        return param.apply_coords(coords)


Augmentor = ImageAugmentor
"""tensorpack's older name of :class:`ImageAugmentor`."""


class AugmentorList(ImageAugmentor):
    """The augmentors one after the other: each draws its parameters from the image the
    previous one made (a LazyTransform), as in tensorpack."""

    def __init__(self, augmentors: Sequence[ImageAugmentor]) -> None:
        if not isinstance(augmentors, (list, tuple)):
            raise TypeError(f"AugmentorList(augmentors=...) must be a list or tuple of augmentors, "
                            f"got {type(augmentors).__name__}")
        for a in augmentors:
            if not hasattr(a, "get_transform"):
                raise TypeError(f"AugmentorList(augmentors=...) takes augmentors (with get_transform), got {a!r}")
        self.augmentors = augmentors
        super().__init__()

    def _sub_augmentors(self) -> Sequence[ImageAugmentor]:
        return self.augmentors

    def get_transform(self, img: np.ndarray) -> Any:
        check_dtype(img)
        if img.ndim not in (2, 3):
            raise ValueError(f"AugmentorList takes images of 2 or 3 dimensions (HW or HWC), got shape {img.shape}")
        from .transform import LazyTransform, TransformList
        tfms: list[Any] = []
        for idx, a in enumerate(self.augmentors):
            t = a.get_transform(img) if idx == 0 else LazyTransform(a.get_transform)
            if isinstance(t, TransformList):
                tfms.extend(t.tfms)
            else:
                tfms.append(t)
        return TransformList(tfms)

    def __repr__(self) -> str:
        each = ",\n".join("  " + repr(x) for x in self.augmentors)
        return f"imgaug.AugmentorList([\n{each}])"

    __str__ = __repr__


class PhotometricAugmentor(ImageAugmentor):
    """An augmentor that changes pixels only (coordinates stay): subclasses implement
    ``_get_augment_params(img)`` (random draws; none by default) and ``_augment(img, params)``."""

    def get_transform(self, img: np.ndarray) -> Any:
        p = self._get_augment_params(img)
        from .transform import PhotometricTransform
        return PhotometricTransform(func=lambda img: self._augment(img, p), name="from " + str(self))

    def _get_augment_params(self, img: np.ndarray) -> Any:
        return None

    def _augment(self, img: np.ndarray, params: Any) -> np.ndarray:
        raise NotImplementedError(f"{type(self).__name__} must implement _augment(img, params)")
