"""BSDS500 edge detection, as tensorpack's ``BSDS500``.

Datapoints ``[image, label]``: a 321x481x3 uint8 BGR image and a 321x481 float32 edge map in
[0, 1] (the fraction of annotators marking each pixel as a boundary). Reads
``<data_dir>/BSR/BSDS500/data/{images,groundTruth}/<name>/``. Needs OpenCV and scipy.
"""
from __future__ import annotations

import glob
import os
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..base import RNGDataFlow
from . import _optional
from .dataset_path import get_dataset_path
from .downloads import RemoteFile, ensure_files, extract_tar

__all__ = ["BSDS500"]

# tensorpack gives the size only; no published checksum is known, so the size is checked
DATA = RemoteFile("BSR_bsds500.tgz",
                  "http://www.eecs.berkeley.edu/Research/Projects/CS/vision/grouping/BSR/BSR_bsds500.tgz",
                  size=70763455)
IMG_W, IMG_H = 481, 321


class BSDS500(RNGDataFlow):
    """The Berkeley Segmentation Data Set 500: ``[image (321, 481, 3) uint8, edges (321, 481) float32]``.

    Portrait images and maps are transposed to landscape, as in tensorpack. Images are read
    in sorted file-name order (tensorpack took the directory's order).
    """

    def __init__(self, name: str, data_dir: str | None = None, shuffle: bool = True) -> None:
        if name not in ("train", "test", "val"):
            raise ValueError(f"BSDS500: name must be 'train', 'test' or 'val', got {name!r}")
        cv2 = _optional.cv2("BSDS500")
        loadmat = _optional.scipy_io("BSDS500").loadmat
        if data_dir is None:
            data_dir = get_dataset_path("bsds500_data")
        data_dir = os.path.expanduser(data_dir)
        if not os.path.isdir(os.path.join(data_dir, "BSR")):
            (archive,) = ensure_files("BSDS500", data_dir, [DATA], present=["BSR"])
            extract_tar(archive, data_dir)
        self.data_root = os.path.join(data_dir, "BSR", "BSDS500", "data")
        if not os.path.isdir(self.data_root):
            raise FileNotFoundError(f"BSDS500: {self.data_root} not found (BSR_bsds500.tgz extracts it)")
        self.shuffle = shuffle
        self._load(name, cv2, loadmat)

    def _load(self, name: str, cv2: Any, loadmat: Any) -> None:
        image_files = sorted(glob.glob(os.path.join(self.data_root, "images", name, "*.jpg")))
        gt_dir = os.path.join(self.data_root, "groundTruth", name)
        self.data = np.zeros((len(image_files), IMG_H, IMG_W, 3), dtype="uint8")
        self.label = np.zeros((len(image_files), IMG_H, IMG_W), dtype="float32")
        for idx, f in enumerate(image_files):
            im = cv2.imread(f, cv2.IMREAD_COLOR)
            if im is None:
                raise ValueError(f"BSDS500: OpenCV could not decode {f}")
            if im.shape[0] > im.shape[1]:
                im = np.transpose(im, (1, 0, 2))
            if im.shape[:2] != (IMG_H, IMG_W):
                raise ValueError(f"BSDS500: {f} is {im.shape[:2]}, expected {(IMG_H, IMG_W)} (or transposed)")
            gt_file = os.path.join(gt_dir, os.path.basename(f).split(".")[0])
            gt = loadmat(gt_file)["groundTruth"][0]
            n_annot = gt.shape[0]
            gt = sum(gt[k]["Boundaries"][0][0] for k in range(n_annot)).astype("float32")
            gt *= 1.0 / n_annot
            if gt.shape[0] > gt.shape[1]:
                gt = gt.transpose()
            if gt.shape != (IMG_H, IMG_W):
                raise ValueError(f"BSDS500: {gt_file}.mat is {gt.shape}, expected {(IMG_H, IMG_W)}")
            self.data[idx] = im
            self.label[idx] = gt

    def __len__(self) -> int:
        return self.data.shape[0]

    def __iter__(self) -> Iterator[list[Any]]:
        idxs = np.arange(self.data.shape[0])
        if self.shuffle:
            self._require_rng().shuffle(idxs)
        for k in idxs:
            yield [self.data[k], self.label[k]]
