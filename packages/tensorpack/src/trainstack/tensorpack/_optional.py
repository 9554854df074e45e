"""Import a package that tensorpack's API needs but trainstack does not depend on, on first use, or fail naming
what to install."""
from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["require"]


def require(module: str, user: str, install: str) -> ModuleType:
    """``importlib.import_module(module)``, or an ImportError saying that ``user`` needs it: ``pip install <install>``."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise ImportError(f"{user} needs {module.split('.')[0]}, which is not installed: pip install {install}") from e
