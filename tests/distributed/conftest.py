"""Fixtures of the distributed tests.

``once_per_session(name, make)``: a multi-process run is expensive, and under
pytest-xdist every worker would start its own. This gives the directory
``<session tmp>/<name>``, calling ``make(directory)`` only the first time in the
whole test session (a lock in the session's temporary directory, shared by
xdist's workers); a ``make`` that raised is tried again by the next caller.
This folder is put on ``sys.path`` (the matrix tests import ``matrix_results``).
"""
from __future__ import annotations

import fcntl
import os
import sys
from pathlib import Path
from typing import Callable

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # for `import matrix_results`


@pytest.fixture(scope="session")
def once_per_session(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, Callable[[Path], None]], Path]:
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = tmp_path_factory.getbasetemp().parent  # this session's, shared by its workers
    else:
        root = tmp_path_factory.getbasetemp()

    def run(name: str, make: Callable[[Path], None]) -> Path:
        out = root / name
        with open(root / f"{name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not (out / ".done").exists():
                out.mkdir(exist_ok=True)
                make(out)
                (out / ".done").touch()
        return out

    return run
