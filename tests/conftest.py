"""Fixtures shared by the layers' tests (each layer's own live in its folder's conftest.py)."""
from __future__ import annotations

import pytest


@pytest.fixture
def logger_dir(tmp_path):
    """A fresh logger directory (set_logger_dir) for one test; unset afterwards."""
    from trainstack.callbacks import set_logger_dir, unset_logger_dir  # noqa: PLC0415 - not in the loop layer

    dirname = set_logger_dir(str(tmp_path / "train_log"))
    yield dirname
    unset_logger_dir()
