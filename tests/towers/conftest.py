"""Shared fixtures of the towers tests: a tiny classifier and synthetic dataflows.

Tests run with ``--import-mode=importlib``, so test files reach these through
fixtures (``classifier``, ``make_df``, ``setup``, ...), not by importing conftest.

- :class:`TinyClassifier` - a ``ModelDesc``: inputs ``x`` (float32 ``[None, 4]``)
  and ``label`` (int32 ``[None]``); one ``keras.layers.Dense(2)`` held as
  ``self.fc``; ``build_graph`` returns the cross-entropy ``cost`` (also named
  ``"cost"`` in the tower), names ``"logits"`` and ``"accuracy"``
  (``tf.identity(..., name=...)``) and calls ``add_moving_summary(cost)``;
  ``optimizer()`` is SGD with ``learning_rate`` (default 0.5).
- :func:`make_dataflow` - a list of ``n`` batches ``(x, label)`` of two
  separable Gaussian blobs (a list is a dataflow: re-iterable, with a len).
- :func:`setup_trainer` - ``setup_graph`` of a trainer with a model and an input.

Fixtures: ``classifier`` (the TinyClassifier class), ``model`` (a fresh
instance), ``make_df`` (make_dataflow), ``dataflow`` (10 batches of 16),
``setup`` (setup_trainer), ``cpus`` (this process's worker with 4 logical CPU
devices, for the multi-tower cases of ``multigpu_cases.py``, which the test
files import by name: this folder is put on ``sys.path`` here); ``logger_dir``
comes from ``tests/conftest.py``.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

sys.path.insert(0, str(Path(__file__).parent))  # for `import multigpu_cases` and `tiny_classifier`

from tiny_classifier import (  # noqa: E402, F401 - the fixtures, registered by being here
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
