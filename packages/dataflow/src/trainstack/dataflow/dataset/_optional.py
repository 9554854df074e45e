"""Import an optional package on first use, or fail naming what to install."""
from __future__ import annotations

import importlib
from types import ModuleType


def require(module: str, user: str, install: str) -> ModuleType:
    """``importlib.import_module(module)``, or an ImportError saying ``user`` needs ``install``."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise ImportError(f"{user} needs {module.split('.')[0]}: pip install {install}") from e


def cv2(user: str) -> ModuleType:
    """OpenCV, from the ``imgaug`` extra."""
    return require("cv2", user, "'trainstack-dataflow[imgaug]'")


def scipy_io(user: str) -> ModuleType:
    """scipy.io (MATLAB files); no extra carries scipy, it is installed by hand."""
    return require("scipy.io", user, "scipy")
