"""tensorpack 0.11's ``TinyImageNet``: the 200-class 64x64 ImageNet subset, read from its own folder layout.

Kept at tensorpack's path (``dataflow.dataset.ilsvrc``) in this layer, as tensorpack's API alone needs it.
Datapoints ``[image, label]``: a BGR uint8 image read by OpenCV and the index of its wnid in ``wnids.txt``.
"""
from __future__ import annotations

import os
from pathlib import Path

from ..._optional import require
from .labeled_images import LabeledImageFiles

__all__ = ["TinyImageNet"]


class TinyImageNet(LabeledImageFiles):
    """TinyImageNet (``wnids.txt``, ``train/<wnid>/images/*``, ``val/val_annotations.txt``), as tensorpack's:
    the training images in each class's directory order, the validation images in the annotations' order."""

    def __init__(self, dir: str, name: str, shuffle: bool | None = None) -> None:
        """
        Args:
            dir: the dataset's directory.
            name: ``'train'`` or ``'val'``.
            shuffle: shuffle every pass; default True for ``'train'``.
        """
        if name not in ("train", "val"):
            raise ValueError(f"TinyImageNet: name must be 'train' or 'val', got {name!r}")
        root = Path(os.path.expanduser(dir))
        if not root.is_dir():
            raise FileNotFoundError(f"TinyImageNet: {root} is not a directory")
        self._cv2 = require("cv2", "TinyImageNet", "opencv-python-headless")
        self.full_dir = root / name
        self.shuffle = name == "train" if shuffle is None else shuffle
        wnids = [x.strip() for x in (root / "wnids.txt").read_text().splitlines()]
        cls_to_id = {wnid: i for i, wnid in enumerate(wnids)}
        if len(cls_to_id) != 200:
            raise ValueError(f"TinyImageNet: {root / 'wnids.txt'} lists {len(cls_to_id)} classes, not 200")
        self.imglist: list[tuple[str, int]] = []
        if name == "train":
            for clsid, wnid in enumerate(wnids):
                self.imglist += [(str(img), clsid) for img in (self.full_dir / wnid / "images").iterdir()]
        else:
            for line in (self.full_dir / "val_annotations.txt").read_text().splitlines():
                fields = line.strip().split()
                self.imglist.append((str(self.full_dir / "images" / fields[0]), cls_to_id[fields[1]]))

    def _labeled_files(self) -> list[tuple[str, int]]:
        return self.imglist
