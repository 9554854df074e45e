"""MNIST and Fashion-MNIST from their idx.gz files, as tensorpack's ``Mnist``/``FashionMnist``.

Datapoints ``[image, label]``: a 28x28 float32 image in [0, 1] and a uint8 label, in file
order or shuffled by ``self.rng`` as tensorpack does. The files are read from
``<dir>/`` (default ``get_dataset_path('mnist_data')``), downloaded there when missing.
"""
from __future__ import annotations

import gzip
import os
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..base import RNGDataFlow
from .dataset_path import get_dataset_path
from .downloads import RemoteFile, ensure_files

__all__ = ["Mnist", "FashionMnist", "read_idx_images", "read_idx_labels"]

_IMAGE_MAGIC, _LABEL_MAGIC = 2051, 2049
_SPLIT_FILES = {"train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
                "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")}


def _read_header(stream: Any, filename: str, magic: int, count: int) -> list[int]:
    header = stream.read(4 * (count + 1))
    if len(header) != 4 * (count + 1):
        raise ValueError(f"MNIST file {filename} is truncated: {len(header)} header bytes")
    values = [int(v) for v in np.frombuffer(header, dtype=">u4")]
    if values[0] != magic:
        raise ValueError(f"invalid magic number {values[0]} in MNIST file {filename}, expected {magic}")
    return values[1:]


def read_idx_images(filename: str) -> np.ndarray:
    """An idx3 gz file as float32 images ``(n, rows, cols, 1)`` in [0, 1] (tensorpack's layout)."""
    with gzip.open(filename) as stream:
        num, rows, cols = _read_header(stream, filename, _IMAGE_MAGIC, 3)
        buf = stream.read(num * rows * cols)
    if len(buf) != num * rows * cols:
        raise ValueError(f"MNIST file {filename} is truncated: {len(buf)} pixel bytes for {num} images "
                         f"of {rows}x{cols}")
    data = np.frombuffer(buf, dtype=np.uint8).reshape(num, rows, cols, 1)
    return data.astype("float32") / 255.0


def read_idx_labels(filename: str) -> np.ndarray:
    """An idx1 gz file as a uint8 label vector."""
    with gzip.open(filename) as stream:
        (num,) = _read_header(stream, filename, _LABEL_MAGIC, 1)
        buf = stream.read(num)
    if len(buf) != num:
        raise ValueError(f"MNIST file {filename} is truncated: {len(buf)} labels, header says {num}")
    return np.frombuffer(buf, dtype=np.uint8)


class Mnist(RNGDataFlow):
    """Produces ``[image, label]`` of MNIST: image 28x28 float32 in [0, 1], label a uint8."""

    _DIR_NAME = "mnist_data"
    _SOURCE_URL = "http://yann.lecun.com/exdb/mnist/"
    # the published MD5 sums (the ones torchvision checks)
    _MD5 = {"train-images-idx3-ubyte.gz": "f68b3c2dcbeaaa9fbdd348bbdeb94873",
            "train-labels-idx1-ubyte.gz": "d53e105ee54ea40749a09fcbcd1e9432",
            "t10k-images-idx3-ubyte.gz": "9fb629c4189551a2d022fa330f9573f3",
            "t10k-labels-idx1-ubyte.gz": "ec29112dd5afa0611ce80d1b7f02629c"}

    def __init__(self, train_or_test: str, shuffle: bool = True, dir: str | None = None) -> None:
        """
        Args:
            train_or_test: ``'train'`` or ``'test'``.
            shuffle: shuffle the datapoints every pass (with ``self.rng``).
            dir: the directory with the four idx.gz files; default ``get_dataset_path('mnist_data')``.
        """
        if train_or_test not in _SPLIT_FILES:
            raise ValueError(f"{type(self).__name__}: train_or_test must be 'train' or 'test', "
                             f"got {train_or_test!r}")
        if dir is None:
            dir = get_dataset_path(self._DIR_NAME)
        self.train_or_test = train_or_test
        self.shuffle = shuffle
        self.dir = os.path.expanduser(dir)
        files = [RemoteFile(name, self._SOURCE_URL + name, md5=self._MD5[name])
                 for name in _SPLIT_FILES[train_or_test]]
        image_file, label_file = ensure_files(type(self).__name__, self.dir, files)
        self.images = read_idx_images(image_file)
        self.labels = read_idx_labels(label_file)
        if self.images.shape[0] != self.labels.shape[0]:
            raise ValueError(f"{image_file} has {self.images.shape[0]} images but {label_file} has "
                             f"{self.labels.shape[0]} labels")

    def __len__(self) -> int:
        return self.images.shape[0]

    def __iter__(self) -> Iterator[list[Any]]:
        idxs = list(range(len(self)))
        if self.shuffle:
            self._require_rng().shuffle(idxs)
        rows, cols = self.images.shape[1:3]
        for k in idxs:
            yield [self.images[k].reshape((rows, cols)), self.labels[k]]


class FashionMnist(Mnist):
    """Same API as :class:`Mnist`, with Zalando's Fashion-MNIST (``fashion_mnist_data``)."""

    _DIR_NAME = "fashion_mnist_data"
    _SOURCE_URL = "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"
    _MD5 = {"train-images-idx3-ubyte.gz": "8d4fb7e6c68d591d4c3dfef9ec88bf0d",
            "train-labels-idx1-ubyte.gz": "25c81989df183df01b3e8a0aad5dffbe",
            "t10k-images-idx3-ubyte.gz": "bef4ecab320f06d8554ea6380940ec79",
            "t10k-labels-idx1-ubyte.gz": "bb300cfdad3c16e7a12a480ee83cd310"}

    def get_label_names(self) -> list[str]:
        """The name of each class."""
        return ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]
