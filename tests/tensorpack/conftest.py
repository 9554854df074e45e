"""Shared fixtures of the tensorpack layer's tests (its TF1 room and older trainer API).

Tests run with ``--import-mode=importlib``, so test files reach these through fixtures, and
import the case modules (``tf1_layer_cases``, ...) by name: this folder is put on ``sys.path``
here, and so is ``tests/towers`` for ``multigpu_cases`` (the multi-device worker process, see
that module), which the TF2 and TF1 multi-GPU tests share.

Fixtures: ``model`` (a fresh TinyClassifier: logistic regression on 4 features, 2 classes, a
plain Keras ``Dense`` in the core's ``ModelDesc``), ``make_df`` (a list of ``n`` batches of two
separable Gaussian blobs), ``cpus`` (this process's worker with 4 logical CPU devices);
``logger_dir`` comes from ``tests/conftest.py``.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

HERE = Path(__file__).parent
for path in (HERE, HERE.parent / "towers"):  # the case modules, imported by name
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from tiny_classifier import (  # noqa: E402, F401 - tests/towers' fixtures, registered by being here
    NUM_FEATURES,
    TinyClassifier,
    classifier,
    cpus,
    dataflow,
    make_dataflow,
    make_df,
    model,
    setup,
    setup_trainer,
)
