"""SVHN cropped digits from ``{train,test,extra}_32x32.mat``, as tensorpack's ``SVHNDigit``.

Datapoints ``[image, label]``: a 32x32x3 uint8 image and a uint8 label in 0..9 (the files'
10 is 0). Reading the MATLAB files needs scipy (``pip install scipy``), imported on first use.
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..base import RNGDataFlow
from . import _optional
from .dataset_path import get_dataset_path
from .downloads import RemoteFile, ensure_files

__all__ = ["SVHNDigit"]

SVHN_URL = "http://ufldl.stanford.edu/housenumbers/"
# the published MD5 sums (the ones torchvision checks)
_MD5 = {"train": "e26dedcc434d2e4c54c9b2d4a06d8373", "test": "eb5a983be6a315427106f1b164d9cef3",
        "extra": "a93ce644f1a588dc4d68dda5feec44a7"}


class SVHNDigit(RNGDataFlow):
    """`SVHN <http://ufldl.stanford.edu/housenumbers/>`_ cropped digits: ``[32x32x3 uint8, label 0..9]``.

    Loaded arrays are cached per file (tensorpack cached them per split name only, whatever
    the directory), so building the same split twice reads it once.
    """

    _Cache: dict[Any, tuple[np.ndarray, np.ndarray]] = {}

    def __init__(self, name: str, data_dir: str | None = None, shuffle: bool = True) -> None:
        """
        Args:
            name: ``'train'``, ``'test'`` or ``'extra'``.
            data_dir: the directory with the original ``<name>_32x32.mat``; default
                ``get_dataset_path('svhn_data')``.
            shuffle: shuffle every pass.
        """
        if name not in _MD5:
            raise ValueError(f"SVHNDigit: name must be 'train', 'test' or 'extra', got {name!r}")
        self.shuffle = shuffle
        if data_dir is None:
            data_dir = get_dataset_path("svhn_data")
        data_dir = os.path.expanduser(data_dir)
        filename = f"{name}_32x32.mat"
        key = os.path.abspath(os.path.join(data_dir, filename))
        if key in SVHNDigit._Cache:
            self.X, self.Y = SVHNDigit._Cache[key]
            return
        scipy_io = _optional.scipy_io("SVHNDigit")
        (path,) = ensure_files("SVHNDigit", data_dir, [RemoteFile(filename, SVHN_URL + filename, md5=_MD5[name])])
        data = scipy_io.loadmat(path)
        self.X = data["X"].transpose(3, 0, 1, 2)
        self.Y = data["y"].reshape(-1)
        self.Y[self.Y == 10] = 0
        if len(self.X) != len(self.Y):
            raise ValueError(f"{path}: {len(self.X)} images but {len(self.Y)} labels")
        SVHNDigit._Cache[key] = (self.X, self.Y)

    def __len__(self) -> int:
        return self.X.shape[0]

    def __iter__(self) -> Iterator[list[Any]]:
        idxs = np.arange(self.X.shape[0])
        if self.shuffle:
            self._require_rng().shuffle(idxs)
        for k in idxs:
            yield [self.X[k], self.Y[k]]

    @staticmethod
    def get_per_pixel_mean(names: tuple[str, ...] = ("train", "test", "extra"),
                           data_dir: str | None = None) -> np.ndarray:
        """The 32x32x3 mean image of the given splits."""
        images = [SVHNDigit(x, data_dir, shuffle=False).X for x in names]
        return np.concatenate(tuple(images)).mean(axis=0)
