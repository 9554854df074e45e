"""tensorpack 0.11's ``tensorpack.dataflow.dataset.caltech101``: ``Caltech101Silhouettes``, the 28x28 Caltech 101
silhouettes of Marlin's ``caltech101_silhouettes_28_split1.mat`` (read with scipy's ``loadmat``)."""
from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from trainstack.callbacks import logger
from trainstack.dataflow import RNGDataFlow

from ..._optional import require
from ..._replaced import stand_in_names, unprovided
from ...utils.fs import download, get_dataset_path

__all__ = ["Caltech101Silhouettes"] + stand_in_names(__name__)

_FILE = "caltech101_silhouettes_28_split1.mat"
#: each split's number of images in the published file (tensorpack reshapes to exactly these)
_SIZES = {"train": 4100, "test": 2307, "val": 2264}


class Caltech101Silhouettes(RNGDataFlow):
    """``[image, label]``: a 28x28 image of the file's values (0 or 1) and a label in 0..100 (the file's minus 1),
    as tensorpack's; the file is downloaded from Marlin's site into ``dir`` if missing."""

    _DIR_NAME = "caltech101_data"
    _SOURCE_URL = "https://people.cs.umass.edu/~marlin/data/"

    def __init__(self, name: str, shuffle: bool = True, dir: str | None = None) -> None:
        """
        Args:
            name: ``'train'``, ``'test'`` or ``'val'``.
            shuffle: shuffle every pass.
            dir: the directory of the ``.mat`` file; default ``get_dataset_path('caltech101_data')``.
        """
        if name not in _SIZES:
            raise ValueError(f"Caltech101Silhouettes: name must be 'train', 'test' or 'val', got {name!r}")
        scipy_io = require("scipy.io", "Caltech101Silhouettes", "scipy")
        if dir is None:
            dir = get_dataset_path(self._DIR_NAME)
        self.name = name
        self.shuffle = shuffle
        path = os.path.join(dir, _FILE)
        if not os.path.exists(path):
            logger.info(f"Downloading to {path}...")
            download(self._SOURCE_URL + _FILE, dir)
        self.data = scipy_io.loadmat(path)
        self.images = self.data[f"{name}_data"].reshape((_SIZES[name], 28, 28))
        self.labels = self.data[f"{name}_labels"].ravel() - 1

    def __len__(self) -> int:
        return self.images.shape[0]

    def __iter__(self) -> Iterator[list[Any]]:
        idxs = list(range(len(self)))
        if self.shuffle:
            self._require_rng().shuffle(idxs)
        for k in idxs:
            yield [self.images[k], self.labels[k]]


__getattr__ = unprovided(__name__)
