"""The reading shared by the image datasets of files listed with their labels (``Places365Standard``,
``TinyImageNet``): each pass reads the listed files with OpenCV, in order or shuffled."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from trainstack.dataflow import RNGDataFlow

__all__ = ["LabeledImageFiles"]


class LabeledImageFiles(RNGDataFlow):
    """``[image, label]`` for each ``(file, label)`` of :meth:`_labeled_files`: a BGR uint8 image read by
    OpenCV (``self._cv2``), in the list's order, or shuffled every pass when ``self.shuffle``; a file
    OpenCV cannot read is an ``OSError`` naming it."""

    shuffle: bool
    _cv2: Any

    def _labeled_files(self) -> list[tuple[str, int]]:
        """Hook: the ``(file, label)`` pairs, in the dataset's order."""
        raise NotImplementedError

    def __len__(self) -> int:
        return len(self._labeled_files())

    def __iter__(self) -> Iterator[list[Any]]:
        files = self._labeled_files()
        idxs = np.arange(len(files))
        if self.shuffle:
            self._require_rng().shuffle(idxs)
        for k in idxs:
            fname, label = files[k]
            im = self._cv2.imread(fname, self._cv2.IMREAD_COLOR)
            if im is None:
                raise OSError(f"{type(self).__name__}: OpenCV could not read {fname}")
            yield [im, label]
