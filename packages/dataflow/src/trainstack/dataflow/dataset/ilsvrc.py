"""ILSVRC12 (ImageNet) image lists, as tensorpack's ``ILSVRCMeta``, ``ILSVRC12Files`` and ``ILSVRC12``.

The lists (``train.txt``, ``val.txt``, ``test.txt``, ``synsets.txt``, ``synset_words.txt``) are
caffe's ``caffe_ilsvrc12.tar.gz``, in ``meta_dir`` (default ``get_dataset_path('ilsvrc_metadata')``,
downloaded there when ``synsets.txt`` is missing). ``ILSVRC12Files`` yields ``[filename, label]``;
``ILSVRC12`` decodes the images with OpenCV (BGR uint8), imported on first use.
"""
from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..base import RNGDataFlow
from . import _optional
from .blob_proto import blob_proto_data
from .dataset_path import get_dataset_path
from .downloads import RemoteFile, ensure_files, extract_tar

__all__ = ["ILSVRCMeta", "ILSVRC12Files", "ILSVRC12"]

logger = logging.getLogger(__name__)

# tensorpack gives the tarball's size only; no published checksum is known, so the size is checked
CAFFE_ILSVRC12 = RemoteFile("caffe_ilsvrc12.tar.gz", "http://dl.caffe.berkeleyvision.org/caffe_ilsvrc12.tar.gz",
                            size=17858008)


class ILSVRCMeta:
    """The metadata of :class:`ILSVRC12`: class names, synsets and image lists."""

    def __init__(self, dir: str | None = None) -> None:
        if dir is None:
            dir = get_dataset_path("ilsvrc_metadata")
        self.dir = os.path.expanduser(dir)
        if not os.path.isfile(os.path.join(self.dir, "synsets.txt")):
            (archive,) = ensure_files("ILSVRCMeta", self.dir, [CAFFE_ILSVRC12], present=["synsets.txt"])
            extract_tar(archive, self.dir)

    def _lines(self, name: str) -> list[str]:
        fname = os.path.join(self.dir, name)
        if not os.path.isfile(fname):
            raise FileNotFoundError(f"ILSVRCMeta: {fname} not found (it is part of caffe_ilsvrc12.tar.gz)")
        with open(fname) as f:
            return [x.strip() for x in f.readlines()]

    def get_synset_words_1000(self) -> dict[int, str]:
        """``{class number: class name}`` from ``synset_words.txt``."""
        return dict(enumerate(self._lines("synset_words.txt")))

    def get_synset_1000(self) -> dict[int, str]:
        """``{class number: synset id}`` from ``synsets.txt``."""
        return dict(enumerate(self._lines("synsets.txt")))

    def get_per_pixel_mean(self, size: tuple[int, int] | None = None) -> np.ndarray:
        """caffe's per-pixel mean, ``imagenet_mean.binaryproto``: float32 ``(256, 256, 3)`` (BGR, in
        [0, 255]), resized to ``size`` = (h, w) if given (OpenCV)."""
        fname = os.path.join(self.dir, "imagenet_mean.binaryproto")
        if not os.path.isfile(fname):
            raise FileNotFoundError(f"ILSVRCMeta: {fname} not found (it is part of caffe_ilsvrc12.tar.gz)")
        with open(fname, "rb") as f:
            data = blob_proto_data(f.read())
        if data.size != 3 * 256 * 256:
            raise ValueError(f"ILSVRCMeta: {fname} holds {data.size} values, not a 3x256x256 mean")
        arr = np.transpose(data.reshape((3, 256, 256)), [1, 2, 0])
        if size is not None:
            arr = _optional.cv2("ILSVRCMeta.get_per_pixel_mean").resize(arr, tuple(size)[::-1])
        return arr

    def get_image_list(self, name: str, dir_structure: str = "original") -> list[tuple[str, int]]:
        """``[(image filename relative to <dir>/<name>, label)]`` from ``<name>.txt``.

        With ``dir_structure='train'``, val/test names get their synset folder prefixed.
        """
        if name not in ("train", "val", "test"):
            raise ValueError(f"ILSVRCMeta: name must be 'train', 'val' or 'test', got {name!r}")
        if dir_structure not in ("original", "train"):
            raise ValueError(f"ILSVRCMeta: dir_structure must be 'original' or 'train', got {dir_structure!r}")
        add_label_to_fname = name != "train" and dir_structure != "original"
        synset = self.get_synset_1000() if add_label_to_fname else None
        ret = []
        for lineno, line in enumerate(self._lines(name + ".txt"), 1):
            if not line:
                continue
            parts = line.split()
            if len(parts) != 2:
                raise ValueError(f"{os.path.join(self.dir, name + '.txt')}:{lineno}: expected "
                                 f"'<filename> <label>', got {line!r}")
            fname, cls = parts[0], int(parts[1])
            if synset is not None:
                fname = os.path.join(synset[cls], fname)
            ret.append((fname, cls))
        if not ret:
            raise ValueError(f"{os.path.join(self.dir, name + '.txt')} lists no images")
        return ret

    @staticmethod
    def guess_dir_structure(dir: str) -> str:
        """``'train'`` if ``dir`` has synset sub-folders (``n...``), else ``'original'``."""
        entries = sorted(os.listdir(dir))
        if not entries:
            raise ValueError(f"ILSVRC12: {dir} is empty")
        subdir = entries[0]
        if subdir.startswith("n") and os.path.isdir(os.path.join(dir, subdir)):
            structure = "train"
        else:
            structure = "original"
        logger.info("[ILSVRC12] Assuming directory %s has '%s' structure.", dir, structure)
        return structure


class ILSVRC12Files(RNGDataFlow):
    """As :class:`ILSVRC12`, but yields ``[image filename, label]``, decoding nothing."""

    def __init__(self, dir: str, name: str, meta_dir: str | None = None,
                 shuffle: bool | None = None, dir_structure: str | None = None) -> None:
        if name not in ("train", "test", "val"):
            raise ValueError(f"{type(self).__name__}: name must be 'train', 'val' or 'test', got {name!r}")
        dir = os.path.expanduser(dir)
        self.full_dir = os.path.join(dir, name)
        if not os.path.isdir(self.full_dir):
            raise FileNotFoundError(f"{type(self).__name__}: no directory {self.full_dir} (expected "
                                    f"<dir>/{name}/ with the images)")
        if meta_dir is not None and not os.path.isdir(meta_dir):
            raise FileNotFoundError(f"{type(self).__name__}: meta_dir {meta_dir} is not a directory")
        self.name = name
        self.shuffle = name == "train" if shuffle is None else shuffle
        if name == "train":
            dir_structure = "train"
        if dir_structure is None:
            dir_structure = ILSVRCMeta.guess_dir_structure(self.full_dir)
        self.imglist = ILSVRCMeta(meta_dir).get_image_list(name, dir_structure)
        for fname, _ in self.imglist[:10]:
            path = os.path.join(self.full_dir, fname)
            if not os.path.isfile(path):
                raise FileNotFoundError(f"{type(self).__name__}: {path}, listed in {name}.txt, not found")

    def __len__(self) -> int:
        return len(self.imglist)

    def __iter__(self) -> Iterator[list[Any]]:
        idxs = np.arange(len(self.imglist))
        if self.shuffle:
            self._require_rng().shuffle(idxs)
        for k in idxs:
            fname, label = self.imglist[k]
            yield [os.path.join(self.full_dir, fname), label]


class ILSVRC12(ILSVRC12Files):
    """ILSVRC12 classification: ``[image HxWx3 uint8 BGR, label in 0..999]``.

    ``dir`` holds ``train/``, ``val/``, ``test/`` as tensorpack describes: ``train/<synset>/*.JPEG``;
    ``val/`` either flat (``dir_structure='original'``) or in synset folders (``'train'``),
    guessed when None. Decoding needs OpenCV: ``pip install 'trainstack-dataflow[imgaug]'``.
    """

    def __init__(self, dir: str, name: str, meta_dir: str | None = None,
                 shuffle: bool | None = None, dir_structure: str | None = None) -> None:
        _optional.cv2("ILSVRC12")
        super().__init__(dir, name, meta_dir, shuffle, dir_structure)

    def __iter__(self) -> Iterator[list[Any]]:
        cv2 = _optional.cv2("ILSVRC12")
        for fname, label in super().__iter__():
            im = cv2.imread(fname, cv2.IMREAD_COLOR)
            if im is None:
                raise ValueError(f"ILSVRC12: OpenCV could not decode {fname}")
            yield [im, label]
