"""OpenCV for the augmentors, imported on first use (the ``imgaug`` extra), and the OpenCV
constants their signatures default to (so that importing the augmentors needs no OpenCV)."""
from __future__ import annotations

import importlib
from types import ModuleType

# OpenCV's enum values (stable across OpenCV 3, 4 and 5; a test compares them with cv2's)
INTER_NEAREST = 0
INTER_LINEAR = 1
INTER_CUBIC = 2
INTER_AREA = 3
BORDER_CONSTANT = 0
BORDER_REPLICATE = 1
COLOR_BGR2GRAY = 6
COLOR_RGB2GRAY = 7

_INSTALL = "pip install 'trainstack-dataflow[imgaug]'"


def cv2(user: str = "trainstack.dataflow.imgaug") -> ModuleType:
    """The ``cv2`` module, or an ImportError saying that ``user`` needs the ``imgaug`` extra."""
    try:
        return importlib.import_module("cv2")
    except ImportError as e:
        raise ImportError(f"{user} needs OpenCV (cv2): {_INSTALL}") from e
