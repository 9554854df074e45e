"""Dataflows: re-iterable Python objects yielding one datapoint per batch.

A dataflow is anything whose ``iter()`` starts a fresh pass over its data
(a list, a class with ``__iter__``, tensorpack's DataFlow). ``__len__`` gives
the number of datapoints in a pass when it is known; ``reset_state()``, when
present, is called once in the process that iterates it, before the first pass.
"""
from __future__ import annotations

from typing import Any, Iterator

from .errors import EmptyDataFlowError, InputError

__all__ = ["dataflow_size", "reset_dataflow", "repeat_passes"]


def dataflow_size(dataflow: Any, what: str = "dataflow") -> int:
    """The number of datapoints in one pass of ``dataflow``, from its ``__len__``."""
    try:
        size = len(dataflow)
    except TypeError:
        raise InputError(
            f"{what} {type(dataflow).__name__} has no __len__, so its size (the default "
            "steps_per_epoch) is unknown; give it a __len__ or pass steps_per_epoch") from None
    if size <= 0:
        raise EmptyDataFlowError(f"{what} {type(dataflow).__name__} has size {size}: nothing to train on")
    return int(size)


def reset_dataflow(dataflow: Any) -> None:
    """Call ``dataflow.reset_state()`` when it has one (tensorpack's DataFlow protocol)."""
    reset = getattr(dataflow, "reset_state", None)
    if callable(reset):
        reset()


def repeat_passes(dataflow: Any, what: str = "dataflow") -> Iterator[Any]:
    """Yield the datapoints of pass after pass of ``dataflow``, forever.

    An epoch of ``steps_per_epoch == len(dataflow)`` steps is then exactly one
    pass; a dataflow shorter than ``steps_per_epoch`` is simply re-iterated. A
    pass that yields nothing raises :class:`EmptyDataFlowError` instead of
    looping forever.
    """
    while True:
        empty = True
        for datapoint in dataflow:
            empty = False
            yield datapoint
        if empty:
            raise EmptyDataFlowError(
                f"{what} {type(dataflow).__name__} yielded no datapoint in a whole pass; "
                "an input needs at least one datapoint per pass")
