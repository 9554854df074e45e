"""CIFAR-10 and CIFAR-100 from their python pickles, as tensorpack's ``Cifar10``/``Cifar100``.

Datapoints ``[image, label]``: a 32x32x3 uint8 image (HWC, RGB) and an int label, in file
order or shuffled by ``self.rng``. Read from ``<dir>/cifar-10-batches-py`` or
``<dir>/cifar-100-python`` (default ``dir``: ``get_dataset_path('cifar10_data')`` /
``'cifar100_data'``); the tarball is downloaded and extracted there when that folder is missing.
"""
from __future__ import annotations

import os
import pickle
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..base import RNGDataFlow
from .dataset_path import get_dataset_path
from .downloads import RemoteFile, ensure_files, extract_tar

__all__ = ["CifarBase", "Cifar10", "Cifar100"]

_ARCHIVES = {
    10: RemoteFile("cifar-10-python.tar.gz", "http://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz",
                   md5="c58f30108f718f92721af3b95e74349a", size=170498071),
    100: RemoteFile("cifar-100-python.tar.gz", "http://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz",
                    md5="eb9058c3a382ffc7106e4002c42a8d85", size=169001437),
}
_FOLDERS = {10: "cifar-10-batches-py", 100: "cifar-100-python"}


def _get(dic: dict[Any, Any], key: str) -> Any:
    """A pickle's entry under ``key`` as bytes (python 2 pickles) or str (python 3 ones)."""
    if key.encode() in dic:
        return dic[key.encode()]
    return dic[key]


def get_filenames(dir: str, cifar_classnum: int) -> tuple[list[str], list[str], str]:
    """``(train_files, test_files, meta_file)`` of a CIFAR folder, as tensorpack names them."""
    folder = os.path.join(dir, _FOLDERS[cifar_classnum])
    if cifar_classnum == 10:
        return ([os.path.join(folder, f"data_batch_{i}") for i in range(1, 6)],
                [os.path.join(folder, "test_batch")], os.path.join(folder, "batches.meta"))
    return [os.path.join(folder, "train")], [os.path.join(folder, "test")], os.path.join(folder, "meta")


def read_cifar(filenames: list[str], cifar_classnum: int) -> list[list[Any]]:
    """All ``[image HWC uint8, int label]`` of the pickles, in file order."""
    ret = []
    for fname in filenames:
        with open(fname, "rb") as f:
            dic = pickle.load(f, encoding="bytes")
        data = np.asarray(_get(dic, "data"))
        labels = _get(dic, "labels" if cifar_classnum == 10 else "fine_labels")
        if data.ndim != 2 or data.shape[1] != 3 * 32 * 32 or len(labels) != len(data):
            raise ValueError(f"CIFAR file {fname}: expected data of shape (n, 3072) and n labels, got "
                             f"{data.shape} and {len(labels)} labels")
        for k in range(len(data)):
            ret.append([np.transpose(data[k].reshape(3, 32, 32), [1, 2, 0]), labels[k]])
    return ret


class CifarBase(RNGDataFlow):
    """Produces ``[image, label]`` of CIFAR-10/100: image 32x32x3 uint8 in [0, 255], label an int."""

    def __init__(self, train_or_test: str, shuffle: bool | None = None, dir: str | None = None,
                 cifar_classnum: int = 10) -> None:
        """
        Args:
            train_or_test: ``'train'`` or ``'test'``.
            shuffle: shuffle every pass; default True for the training set.
            dir: the directory holding the extracted CIFAR folder.
            cifar_classnum: 10 or 100.
        """
        if train_or_test not in ("train", "test"):
            raise ValueError(f"CIFAR: train_or_test must be 'train' or 'test', got {train_or_test!r}")
        if cifar_classnum not in (10, 100):
            raise ValueError(f"CIFAR: cifar_classnum must be 10 or 100, got {cifar_classnum!r}")
        self.cifar_classnum = cifar_classnum
        if dir is None:
            dir = get_dataset_path(f"cifar{cifar_classnum}_data")
        self.dir = os.path.expanduser(dir)
        folder = _FOLDERS[cifar_classnum]
        if not os.path.isdir(os.path.join(self.dir, folder)):
            (archive,) = ensure_files(f"Cifar{cifar_classnum}", self.dir, [_ARCHIVES[cifar_classnum]],
                                      present=[folder])
            extract_tar(archive, self.dir)
        train_files, test_files, meta_file = get_filenames(self.dir, cifar_classnum)
        self.fs = train_files if train_or_test == "train" else test_files
        for f in self.fs + [meta_file]:
            if not os.path.isfile(f):
                raise FileNotFoundError(f"Cifar{cifar_classnum}: missing file {f} (the folder {folder} "
                                        "of the python version of CIFAR is incomplete)")
        with open(meta_file, "rb") as meta_f:
            meta = pickle.load(meta_f)
        self._label_names = meta["label_names" if cifar_classnum == 10 else "fine_label_names"]
        self.train_or_test = train_or_test
        self.data = read_cifar(self.fs, cifar_classnum)
        self.shuffle = train_or_test == "train" if shuffle is None else shuffle

    def __len__(self) -> int:
        return len(self.data)

    def __iter__(self) -> Iterator[list[Any]]:
        idxs = np.arange(len(self.data))
        if self.shuffle:
            self._require_rng().shuffle(idxs)
        for k in idxs:
            yield self.data[k]

    def get_per_pixel_mean(self, names: tuple[str, ...] = ("train", "test")) -> np.ndarray:
        """The 32x32x3 float32 mean image of the given splits."""
        for name in names:
            if name not in ("train", "test"):
                raise ValueError(f"names must be 'train' and/or 'test', got {name!r}")
        train_files, test_files, _ = get_filenames(self.dir, self.cifar_classnum)
        files = (train_files if "train" in names else []) + (test_files if "test" in names else [])
        images = np.array([x[0] for x in read_cifar(files, self.cifar_classnum)], dtype="float32")
        return np.mean(images, axis=0)

    def get_per_channel_mean(self, names: tuple[str, ...] = ("train", "test")) -> np.ndarray:
        """The three per-channel means of the given splits."""
        return np.mean(self.get_per_pixel_mean(names), axis=(0, 1))

    def get_label_names(self) -> list[str]:
        """The name of each class."""
        return self._label_names


class Cifar10(CifarBase):
    """CIFAR-10: ``[image 32x32x3 uint8, label in 0..9]``."""

    def __init__(self, train_or_test: str, shuffle: bool | None = None, dir: str | None = None) -> None:
        super().__init__(train_or_test, shuffle, dir, 10)


class Cifar100(CifarBase):
    """CIFAR-100 (fine labels): ``[image 32x32x3 uint8, label in 0..99]``."""

    def __init__(self, train_or_test: str, shuffle: bool | None = None, dir: str | None = None) -> None:
        super().__init__(train_or_test, shuffle, dir, 100)
