"""The errors an input pipeline raises: each names the input and what was expected.

The dataflow errors live in ``trainstack.dataflow.errors`` (worker processes
raise them without TensorFlow); these are the same classes, so ``isinstance``
and ``except`` work with either import.
"""
from __future__ import annotations

from trainstack.dataflow.errors import EmptyDataFlowError, FrameError, InputError, InputWorkerError

__all__ = ["InputError", "InputSignatureError", "EmptyDataFlowError", "InputWorkerError", "FrameError"]


class InputSignatureError(InputError, ValueError):
    """A datapoint or tensor disagrees with the input signature (dtype, shape, count, names)."""
