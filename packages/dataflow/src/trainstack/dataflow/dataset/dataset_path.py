"""Where datasets live: ``$TRAINSTACK_DATASET``, else ``$TENSORPACK_DATASET``, else ``~/tensorpack_data``.

The same place and sub-directory names as tensorpack's ``get_dataset_path``, so a user's
existing data directory works unchanged; ``TRAINSTACK_DATASET`` wins when both are set.
"""
from __future__ import annotations

import os

__all__ = ["get_dataset_path", "dataset_root"]

ENV_VARS = ("TRAINSTACK_DATASET", "TENSORPACK_DATASET")


def dataset_root() -> str:
    """The datasets' root directory (not created here: a download creates what it needs)."""
    for var in ENV_VARS:
        value = os.environ.get(var)
        if value:
            return os.path.expanduser(value)
    return os.path.join(os.path.expanduser("~"), "tensorpack_data")


def get_dataset_path(*args: str) -> str:
    """The path ``<root>/<args...>`` of a dataset (tensorpack's ``get_dataset_path``)."""
    return os.path.join(dataset_root(), *args)
