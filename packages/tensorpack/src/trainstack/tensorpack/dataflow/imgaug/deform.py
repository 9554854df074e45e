"""tensorpack 0.11's ``tensorpack.dataflow.imgaug.deform``: ``GaussianDeform``, a random smooth warp of the image
grid by Gaussian-weighted offsets around anchors, with its ``GaussianMap`` and ``np_sample`` (bilinear sampling).

tensorpack kept the module for reference with an empty ``__all__``; here its names are public, as the rest of
the mirror counts a module's public definitions when its ``__all__`` is empty.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from trainstack.callbacks import logger
from trainstack.dataflow.imgaug import ImageAugmentor, TransformFactory

from ..._replaced import stand_in_names, unprovided

__all__ = ["GaussianMap", "np_sample", "GaussianDeform"] + stand_in_names(__name__)


class GaussianMap:
    """Gaussian weights ``exp(-((y/H - ay)**2 + (x/W - ax)**2) / sigma)`` over an image of ``image_shape`` (H, W)."""

    def __init__(self, image_shape: Sequence[int], sigma: float = 0.5) -> None:
        if len(image_shape) != 2:
            raise ValueError(f"GaussianMap: image_shape must be (height, width), got {image_shape!r}")
        self.shape = image_shape
        self.sigma = sigma

    def get_gaussian_weight(self, anchor: Sequence[float]) -> np.ndarray:
        """The HxW float32 weights around ``anchor`` (y, x in [0, 1])."""
        y, x = np.mgrid[:self.shape[0], :self.shape[1]]
        y = y.astype("float32") / self.shape[0] - anchor[0]
        x = x.astype("float32") / self.shape[1] - anchor[1]
        return np.exp(-(x ** 2 + y ** 2) / self.sigma)


def np_sample(img: np.ndarray, coords: np.ndarray) -> np.ndarray:
    """Bilinear samples of the HxWx3 ``img`` at the HxWx2 ``coords`` (y, x), clipped to the image, as tensorpack's
    ``ImageSample`` layer in NumPy."""
    top = np.array([img.shape[0] - 1, img.shape[1] - 1])
    coords = np.minimum(np.maximum(coords, 0), top)
    lcoor = np.floor(coords).astype("int32")
    ucoor = np.minimum(lcoor + 1, top)
    diff = coords - lcoor
    neg_diff = 1.0 - diff
    lcoory, lcoorx = np.split(lcoor, 2, axis=2)
    ucoory, ucoorx = np.split(ucoor, 2, axis=2)
    diff = np.repeat(diff, 3, 2).reshape((diff.shape[0], diff.shape[1], 2, 3))
    neg_diff = np.repeat(neg_diff, 3, 2).reshape((diff.shape[0], diff.shape[1], 2, 3))
    diffy, diffx = np.split(diff, 2, axis=2)
    ndiffy, ndiffx = np.split(neg_diff, 2, axis=2)
    ret = (img[lcoory, lcoorx, :] * ndiffx * ndiffy + img[ucoory, ucoorx, :] * diffx * diffy
           + img[lcoory, ucoorx, :] * ndiffy * diffx + img[ucoory, lcoorx, :] * diffy * ndiffx)
    return ret[:, :, 0, :]


class GaussianDeform(ImageAugmentor):
    """Moves the sampling grid by ``sum_k weight_k(y, x) * v_k``, each anchor's offset ``v_k`` uniform in
    ``[-randrange, randrange]^2``: tensorpack's (slow) deformation, for HxWx3 images of ``shape``."""

    def __init__(self, anchors: Sequence[Sequence[float]], shape: Sequence[int], sigma: float = 0.5,
                 randrange: float | None = None) -> None:
        """
        Args:
            anchors: the centers (y, x), in [0, 1].
            shape: the images' (height, width).
            sigma: the Gaussian weights' sigma.
            randrange: the offsets' range; default ``shape[0] / 8``.
        """
        logger.warn("GaussianDeform is slow. Consider using it with 4 or more prefetching processes.")
        super().__init__()
        self.anchors = anchors
        self.K = len(self.anchors)
        self.shape = shape
        self.grid = np.mgrid[0:self.shape[0], 0:self.shape[1]].transpose(1, 2, 0).astype("float32")  # HxWx2
        gm = GaussianMap(self.shape, sigma=sigma)
        self.gws = np.array([gm.get_gaussian_weight(a) for a in self.anchors], dtype="float32").transpose(1, 2, 0)
        self.randrange = self.shape[0] / 8 if randrange is None else randrange
        self.sigma = sigma

    def get_transform(self, img: np.ndarray) -> Any:
        v = (self.rng.rand(self.K, 2).astype("float32") - 0.5) * 2 * self.randrange
        return TransformFactory(name=str(self), apply_image=lambda img: self._augment(img, v))

    def _augment(self, img: np.ndarray, v: np.ndarray) -> np.ndarray:
        return np_sample(img, self.grid + np.dot(self.gws, v))


__getattr__ = unprovided(__name__)
