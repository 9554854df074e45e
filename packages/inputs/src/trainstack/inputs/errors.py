"""The errors an input pipeline raises: each names the input and what was expected."""
from __future__ import annotations

__all__ = ["InputError", "InputSignatureError", "EmptyDataFlowError", "InputWorkerError", "FrameError"]


class InputError(RuntimeError):
    """Base class of the input layer's errors."""

    # Raised while tf.function traces a step, an error keeps its type only if AutoGraph can
    # rebuild it from a message, which it does when __init__ is Exception's (RuntimeError's
    # own is not); otherwise users would get a StagingError instead of the error they catch.
    __init__ = Exception.__init__


class InputSignatureError(InputError, ValueError):
    """A datapoint or tensor disagrees with the input signature (dtype, shape, count, names)."""


class EmptyDataFlowError(InputError):
    """A dataflow yielded no datapoint in a whole pass: training would wait forever."""


class InputWorkerError(InputError):
    """A worker process (or a remote sender) producing data died or failed."""


class FrameError(InputError):
    """A msgpack frame was malformed, of an unknown kind, or larger than allowed."""
