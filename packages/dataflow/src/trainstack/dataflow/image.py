"""Dataflows of images: :class:`ImageFromFile` (read files with OpenCV) and the dataflows that run
augmentors (:mod:`trainstack.dataflow.imgaug`) on a datapoint's images and coordinates:
:class:`AugmentImageComponent`, :class:`AugmentImageComponents`, :class:`AugmentImageCoordinates`.

As in tensorpack 0.11: they copy what they augment first (``copy=True``; some augmentors change
their input in place), ``catch_exceptions=True`` drops a datapoint whose augmentation raised
(and logs the first errors, then every hundredth), and ``reset_state`` reseeds the augmentors,
so that every worker process that runs the dataflow draws its own stream.
"""
from __future__ import annotations

import copy as copy_mod
import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from .base import RNGDataFlow
from .common import MapData, MapDataComponent
from .imgaug._cv2 import cv2
from .imgaug.base import AugmentorList, check_dtype, shape2d, validate_coords

__all__ = ["ImageFromFile", "AugmentImageComponent", "AugmentImageCoordinates", "AugmentImageComponents"]

logger = logging.getLogger("trainstack.dataflow")


class ExceptionHandler:
    """Counts the errors raised inside :meth:`catch`; re-raises them unless ``catch_exceptions``
    (then logs the first 9 and every 100th)."""

    def __init__(self, catch_exceptions: bool = False) -> None:
        self._nr_error = 0
        self.catch_exceptions = catch_exceptions

    @contextmanager
    def catch(self) -> Iterator[None]:
        try:
            yield
        except Exception:
            self._nr_error += 1
            if not self.catch_exceptions:
                raise
            if self._nr_error % 100 == 0 or self._nr_error < 10:
                logger.exception("Got %d augmentation errors (the datapoint is dropped).", self._nr_error)


def _as_augmentor_list(owner: str, augmentors: Any) -> AugmentorList:
    if isinstance(augmentors, AugmentorList):
        return augmentors
    if not isinstance(augmentors, (list, tuple)):
        raise TypeError(f"{owner}(augmentors=...) must be an AugmentorList or a list of augmentors, "
                        f"got {type(augmentors).__name__}")
    return AugmentorList(augmentors)


class ImageFromFile(RNGDataFlow):
    """Datapoints ``[image]`` read from ``files``: HxWx3 RGB (``channel=3``; grey files are
    converted) or HxWx1 (``channel=1``), resized to ``resize`` ((h, w) or an int) when given,
    in a new random order every pass when ``shuffle``."""

    def __init__(self, files: Sequence[str], channel: int = 3, resize: Any = None, shuffle: bool = False) -> None:
        if not len(files):
            raise ValueError("ImageFromFile(files=...) got no image files")
        self.files = files
        self.channel = int(channel)
        if self.channel not in (1, 3):
            raise ValueError(f"ImageFromFile(channel=...) must be 1 or 3, got {channel!r}")
        if resize is not None:
            resize = shape2d("ImageFromFile", "resize", resize)
        self.resize = resize
        self.shuffle = shuffle

    def __len__(self) -> int:
        return len(self.files)

    def __iter__(self) -> Iterator[list[np.ndarray]]:
        cv = cv2("ImageFromFile")
        mode = cv.IMREAD_GRAYSCALE if self.channel == 1 else cv.IMREAD_COLOR
        if self.shuffle:
            self._require_rng().shuffle(self.files)
        for f in self.files:
            im = cv.imread(f, mode)
            if im is None:
                raise OSError(f"ImageFromFile: OpenCV cannot read {f!r} as an image (missing, unreadable, or "
                              "not an image format OpenCV knows)")
            if self.channel == 3:
                im = im[:, :, ::-1]
            if self.resize is not None:
                im = cv.resize(im, tuple(self.resize[::-1]))
            if self.channel == 1:
                im = im[:, :, np.newaxis]
            yield [im]


class _AugmentBase:
    """``reset_state`` of the input dataflow and of the augmentors (a new seed for each)."""

    ds: Any
    augs: AugmentorList

    def reset_state(self) -> None:
        self.ds.reset_state()
        self.augs.reset_state()


class AugmentImageComponent(_AugmentBase, MapDataComponent):
    """The augmentors, one after the other, on component ``index`` (an int, or a key of dict
    datapoints) of each datapoint. ``copy``: augment a deep copy (leave the input's arrays as
    they were); ``catch_exceptions``: drop a datapoint whose augmentation raised."""

    def __init__(self, ds: Any, augmentors: Any, index: Any = 0, copy: bool = True,
                 catch_exceptions: bool = False) -> None:
        self.augs = _as_augmentor_list("AugmentImageComponent", augmentors)
        self._copy = copy
        self._exception_handler = ExceptionHandler(catch_exceptions)
        super().__init__(ds, self._aug_mapper, index)

    def _aug_mapper(self, x: Any) -> Any:
        check_dtype(x)
        with self._exception_handler.catch():
            if self._copy:
                x = copy_mod.deepcopy(x)
            return self.augs.augment(x)
        return None  # the exception was caught: drop the datapoint


class AugmentImageCoordinates(_AugmentBase, MapData):
    """The augmentors on the image ``img_index`` and, moved the same way, the Nx2 float array
    of (x, y) coordinates ``coords_index`` of each datapoint; ``copy`` and ``catch_exceptions``
    as in :class:`AugmentImageComponent`."""

    def __init__(self, ds: Any, augmentors: Any, img_index: Any = 0, coords_index: Any = 1, copy: bool = True,
                 catch_exceptions: bool = False) -> None:
        self.augs = _as_augmentor_list("AugmentImageCoordinates", augmentors)
        self._img_index = img_index
        self._coords_index = coords_index
        self._copy = copy
        self._exception_handler = ExceptionHandler(catch_exceptions)
        super().__init__(ds, self._aug_mapper)

    def _aug_mapper(self, dp: Any) -> Any:
        with self._exception_handler.catch():
            img, coords = dp[self._img_index], dp[self._coords_index]
            check_dtype(img)
            validate_coords(coords)
            if self._copy:
                img, coords = copy_mod.deepcopy((img, coords))
            tfms = self.augs.get_transform(img)
            dp[self._img_index] = tfms.apply_image(img)
            dp[self._coords_index] = tfms.apply_coords(coords)
            return dp
        return None


class AugmentImageComponents(_AugmentBase, MapData):
    """The same augmentation of several images (``index``; the first decides the random
    parameters) and coordinate arrays (``coords_index``) of each datapoint, e.g. an image and
    its segmentation mask; ``copy`` and ``catch_exceptions`` as in :class:`AugmentImageComponent`."""

    def __init__(self, ds: Any, augmentors: Any, index: Sequence[Any] = (0, 1), coords_index: Sequence[Any] = (),
                 copy: bool = True, catch_exceptions: bool = False) -> None:
        self.augs = _as_augmentor_list("AugmentImageComponents", augmentors)
        if not len(index):
            raise ValueError("AugmentImageComponents(index=...) must name at least one image component")
        self._exception_handler = ExceptionHandler(catch_exceptions)
        self._copy = copy
        self._index = index
        self._coords_index = coords_index
        super().__init__(ds, self._aug_mapper)

    def _aug_mapper(self, dp: Any) -> Any:
        dp = copy_mod.copy(dp)  # the caller's list stays as it was
        copy_func: Callable[[Any], Any] = copy_mod.deepcopy if self._copy else (lambda x: x)
        with self._exception_handler.catch():
            major = self._index[0]
            im = copy_func(dp[major])
            check_dtype(im)
            tfms = self.augs.get_transform(im)
            dp[major] = tfms.apply_image(im)
            for idx in self._index[1:]:
                check_dtype(dp[idx])
                dp[idx] = tfms.apply_image(copy_func(dp[idx]))
            for idx in self._coords_index:
                coords = copy_func(dp[idx])
                validate_coords(coords)
                dp[idx] = tfms.apply_coords(coords)
            return dp
        return None
