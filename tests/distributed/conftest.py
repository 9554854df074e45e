"""The distributed tests' set-up: this folder is put on ``sys.path`` (the matrix tests import
``matrix_results``). ``once_per_session`` (a multi-process run made once for all of pytest-xdist's
workers) comes from ``tests/conftest.py``."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))  # for `import matrix_results`
