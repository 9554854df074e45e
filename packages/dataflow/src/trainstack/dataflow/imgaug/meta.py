"""Augmentors made of augmentors: apply one with a probability, choose one, shuffle their
order; and :class:`MapImage` (a function as an augmentor), :class:`Identity`."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from trainstack.loop.checks import check_number

from .base import ImageAugmentor
from .transform import NoOpTransform, TransformFactory, TransformList

__all__ = ["RandomChooseAug", "MapImage", "Identity", "RandomApplyAug", "RandomOrderAug"]


def _check_aug(owner: str, aug: Any) -> None:
    if not hasattr(aug, "get_transform"):
        raise TypeError(f"{owner} takes augmentors (objects with get_transform), got {aug!r}")


class Identity(ImageAugmentor):
    """Changes nothing."""

    def get_transform(self, img: np.ndarray) -> Any:
        return NoOpTransform()


class RandomApplyAug(ImageAugmentor):
    """``aug`` with probability ``prob`` (one ``rng.rand()`` per image), else nothing."""

    aug: ImageAugmentor
    prob: float

    def __init__(self, aug: ImageAugmentor, prob: float) -> None:
        _check_aug("RandomApplyAug", aug)
        check_number("RandomApplyAug", "prob", prob, minimum=0)
        self._init(locals())
        super().__init__()

    def get_transform(self, img: np.ndarray) -> Any:
        p = self.rng.rand()
        if p < self.prob:
            return self.aug.get_transform(img)
        return NoOpTransform()

    def _sub_augmentors(self) -> Sequence[ImageAugmentor]:
        return (self.aug,)


class RandomChooseAug(ImageAugmentor):
    """One augmentor of ``aug_lists`` per image: uniformly, or by the probabilities of
    ``(augmentor, probability)`` pairs."""

    aug_lists: Any
    prob: Any

    def __init__(self, aug_lists: Sequence[Any]) -> None:
        if not isinstance(aug_lists, (list, tuple)) or not aug_lists:
            raise ValueError(f"RandomChooseAug(aug_lists=...) must be a non-empty list of augmentors or of "
                             f"(augmentor, probability) pairs, got {aug_lists!r}")
        if isinstance(aug_lists[0], (tuple, list)):
            prob = [k[1] for k in aug_lists]
            aug_lists = [k[0] for k in aug_lists]
        else:
            prob = [1.0 / len(aug_lists)] * len(aug_lists)
        for a in aug_lists:
            _check_aug("RandomChooseAug", a)
        self._init(locals())
        super().__init__()

    def _sub_augmentors(self) -> Sequence[ImageAugmentor]:
        return self.aug_lists

    def get_transform(self, img: np.ndarray) -> Any:
        aug_idx = self.rng.choice(len(self.aug_lists), p=self.prob)
        return self.aug_lists[aug_idx].get_transform(img)


class RandomOrderAug(ImageAugmentor):
    """The augmentors in a random order (each decides on the input image, so they should not
    change its shape)."""

    aug_lists: Sequence[ImageAugmentor]

    def __init__(self, aug_lists: Sequence[ImageAugmentor]) -> None:
        if not isinstance(aug_lists, (list, tuple)):
            raise TypeError(f"RandomOrderAug(aug_lists=...) must be a list of augmentors, got {aug_lists!r}")
        for a in aug_lists:
            _check_aug("RandomOrderAug", a)
        self._init(locals())
        super().__init__()

    def _sub_augmentors(self) -> Sequence[ImageAugmentor]:
        return self.aug_lists

    def get_transform(self, img: np.ndarray) -> Any:
        idxs = self.rng.permutation(len(self.aug_lists))
        tfms = [a.get_transform(img) for a in self.aug_lists]
        return TransformList([tfms[k] for k in idxs])


class MapImage(ImageAugmentor):
    """``func`` on images and, when given, ``coord_func`` on Nx2 (x, y) coordinates."""

    def __init__(self, func: Callable[[np.ndarray], np.ndarray],
                 coord_func: Callable[[np.ndarray], np.ndarray] | None = None) -> None:
        if not callable(func) or (coord_func is not None and not callable(coord_func)):
            raise TypeError(f"MapImage takes functions, got func={func!r}, coord_func={coord_func!r}")
        super().__init__()
        self.func = func
        self.coord_func = coord_func

    def get_transform(self, img: np.ndarray) -> Any:
        if self.coord_func:
            return TransformFactory(name="MapImage", apply_image=self.func, apply_coords=self.coord_func)
        return TransformFactory(name="MapImage", apply_image=self.func)
