"""The errors an input pipeline raises: each names the input and what was expected."""
from __future__ import annotations

__all__ = ["InputError", "InputSignatureError", "EmptyDataFlowError", "InputWorkerError", "FrameError"]


class InputError(RuntimeError):
    """Base class of the input layer's errors."""


class InputSignatureError(InputError, ValueError):
    """A datapoint or tensor disagrees with the input signature (dtype, shape, count, names)."""


class EmptyDataFlowError(InputError):
    """A dataflow yielded no datapoint in a whole pass: training would wait forever."""


class InputWorkerError(InputError):
    """A worker process (or a remote sender) producing data died or failed."""


class FrameError(InputError):
    """A msgpack frame was malformed, of an unknown kind, or larger than allowed."""
