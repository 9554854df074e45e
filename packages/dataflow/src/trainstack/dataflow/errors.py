"""The errors of dataflows and of the processes that run them; each names what went wrong.

They are the input layer's errors: ``trainstack.inputs`` re-exports these
same classes (and adds its own subclasses), so ``except InputError`` catches a
dataflow's error wherever it is raised.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = ["InputError", "EmptyDataFlowError", "InputWorkerError", "FrameError", "UnsendableError"]


class InputError(RuntimeError):
    """Base class of the errors of dataflows and inputs."""

    # Raised while tf.function traces a step, an error keeps its type only if AutoGraph can
    # rebuild it from a message, which it does when __init__ is Exception's (RuntimeError's
    # own is not); otherwise users would get a StagingError instead of the error they catch.
    if TYPE_CHECKING:  # what the assignment below means, for the type checkers
        def __init__(self, *args: object) -> None: ...
    else:
        __init__ = Exception.__init__


class EmptyDataFlowError(InputError):
    """A dataflow yielded no datapoint in a whole pass: training would wait forever."""


class InputWorkerError(InputError):
    """A worker process (or a remote sender) producing data died or failed."""


class FrameError(InputError):
    """A msgpack frame was malformed, of an unknown kind, or larger than allowed."""


class UnsendableError(InputError, TypeError):
    """A datapoint holds something msgpack cannot carry between processes (a set, an object
    array, an arbitrary object); the message names its path inside the datapoint. Also a
    ``TypeError``, what encoding raised before."""
