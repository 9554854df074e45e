"""tensorpack 0.11's ``tensorpack.dataflow.dataset.places``: ``Places365Standard``, the Places365-Standard
scenes in their "easy directory structure" (``train.txt``/``val.txt`` listing ``<split>/<label>/<file>``)."""
from __future__ import annotations

import os

from trainstack.callbacks import logger

from ..._optional import require
from ..._replaced import stand_in_names, unprovided
from .labeled_images import LabeledImageFiles

__all__ = ["Places365Standard"] + stand_in_names(__name__)


class Places365Standard(LabeledImageFiles):
    """``[image, label]``: a BGR uint8 image read by OpenCV, the label's index among the sorted label names (the
    second part of each listed path), as tensorpack's."""

    def __init__(self, dir: str, name: str, shuffle: bool | None = None) -> None:
        """
        Args:
            dir: the dataset's directory.
            name: ``'train'`` or ``'val'``.
            shuffle: shuffle every pass; default True for ``'train'``.
        """
        if name not in ("train", "val"):
            raise ValueError(f"Places365Standard: name must be 'train' or 'val', got {name!r}")
        dir = os.path.expanduser(dir)
        if not os.path.isdir(dir):
            raise FileNotFoundError(f"Places365Standard: {dir} is not a directory")
        self._cv2 = require("cv2", "Places365Standard", "opencv-python-headless")
        self.name = name
        self.shuffle = name == "train" if shuffle is None else shuffle
        label_file = os.path.join(dir, name + ".txt")
        all_files = []
        with open(label_file) as f:
            for line in f:
                all_files.append((os.path.join(dir, line.strip()), line.strip().split("/")[1]))
        self._labels = sorted({label for _, label in all_files})
        labelmap = {label: i for i, label in enumerate(self._labels)}
        self._files = [(path, labelmap[label]) for path, label in all_files]
        logger.info(f"Found {len(self._files)} images in {label_file}.")

    def get_label_names(self) -> list[str]:
        """The name of each class, by class index."""
        return self._labels

    def _labeled_files(self) -> list[tuple[str, int]]:
        return self._files


__getattr__ = unprovided(__name__)
