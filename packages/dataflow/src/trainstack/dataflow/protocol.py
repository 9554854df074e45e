"""The dataflow protocol: re-iterable Python objects yielding one datapoint at a time.

A dataflow is anything whose ``iter()`` starts a fresh pass over its data
(a list, a class with ``__iter__``, trainstack's or tensorpack's DataFlow).
``__len__`` gives the number of datapoints in a pass when it is known (a
DataFlow without a size raises ``NotImplementedError``, as tensorpack's do);
``reset_state()``, when present, is called once in the process that iterates
it, before the first pass.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .errors import EmptyDataFlowError, InputError

__all__ = ["dataflow_size", "dataflow_len_or_none", "reset_dataflow", "repeat_passes", "numbered_passes",
           "EmptyPasses", "MAX_EMPTY_PASSES"]

#: How many passes in a row may yield nothing in the dataflows that repeat passes as tensorpack's do
#: (the runners' workers and threads, the endless parallel maps): tensorpack goes on to the next pass,
#: so a dataflow that yields nothing in some passes (``BatchDataByShape`` whose groups fill slowly, a
#: ``MapData`` that drops a whole small pass) works; one that yields nothing this many times in a row
#: is taken for an empty one and raises :class:`EmptyDataFlowError`, where tensorpack loops forever.
MAX_EMPTY_PASSES = 1000


class EmptyPasses:
    """Counts the passes in a row of one dataflow that yielded nothing; :meth:`end_pass` raises
    :class:`EmptyDataFlowError` once there are ``limit`` of them (1: the first empty pass raises)."""

    def __init__(self, what: str, dataflow: Any, limit: int = MAX_EMPTY_PASSES) -> None:
        self.what, self.name, self.limit, self.count = what, type(dataflow).__name__, limit, 0

    def end_pass(self, empty: bool) -> None:
        """Record that a pass ended, having yielded nothing if ``empty``."""
        self.count = self.count + 1 if empty else 0
        if self.count < self.limit:
            return
        if self.limit == 1:
            raise EmptyDataFlowError(f"{self.what} {self.name} yielded no datapoint in a whole pass; an input "
                                     "needs at least one datapoint per pass")
        raise EmptyDataFlowError(f"{self.what} {self.name} yielded no datapoint in {self.count} passes in a "
                                 "row; a pass that yields nothing is skipped, but this many in a row means it "
                                 "yields nothing at all")


def dataflow_len_or_none(dataflow: Any) -> int | None:
    """``len(dataflow)``, or None when it has no size (no ``__len__``, or one raising
    ``NotImplementedError`` like tensorpack's DataFlows without a size)."""
    try:
        return int(len(dataflow))
    except (TypeError, NotImplementedError):
        return None


def dataflow_size(dataflow: Any, what: str = "dataflow") -> int:
    """The number of datapoints in one pass of ``dataflow``, from its ``__len__``."""
    size = dataflow_len_or_none(dataflow)
    if size is None:
        raise InputError(
            f"{what} {type(dataflow).__name__} has no __len__, so its size (the default "
            "steps_per_epoch) is unknown; give it a __len__ or pass steps_per_epoch")
    if size <= 0:
        raise EmptyDataFlowError(f"{what} {type(dataflow).__name__} has size {size}: nothing to train on")
    return size


def reset_dataflow(dataflow: Any) -> None:
    """Call ``dataflow.reset_state()`` when it has one (tensorpack's DataFlow protocol)."""
    reset = getattr(dataflow, "reset_state", None)
    if callable(reset):
        reset()


def repeat_passes(dataflow: Any, what: str = "dataflow", skip: int = 0, max_empty_passes: int = 1) -> Iterator[Any]:
    """Yield the datapoints of pass after pass of ``dataflow``, forever.

    An epoch of ``steps_per_epoch == len(dataflow)`` steps is then exactly one
    pass; a dataflow shorter than ``steps_per_epoch`` is simply re-iterated. A
    pass that yields nothing raises :class:`EmptyDataFlowError` instead of
    looping forever; with ``max_empty_passes``, only that many in a row do
    (fewer are skipped, as tensorpack's ``RepeatedData(ds, -1)`` does).

    ``skip`` drops the stream's first datapoints, to resume where a run that
    used them stopped: a list or tuple is entered at the right index, any
    other dataflow is iterated (so that its passes, and the random state a
    shuffling dataflow draws from, advance exactly as they did in that run).
    """
    for _, _, datapoint in numbered_passes(dataflow, what, skip, max_empty_passes):
        yield datapoint


def numbered_passes(dataflow: Any, what: str = "dataflow", skip: int = 0,
                    max_empty_passes: int = 1) -> Iterator[tuple[int, int, Any]]:
    """:func:`repeat_passes`, yielding ``(pass, index in the pass, datapoint)`` (from 0), so that
    a bad datapoint can be reported by its position. An exception raised by the dataflow gets
    a note naming the position of the datapoint it was producing."""
    pass_num, start = 0, 0
    empty_passes = EmptyPasses(what, dataflow, max_empty_passes)
    if skip and isinstance(dataflow, (list, tuple)) and dataflow:
        pass_num, start = divmod(skip, len(dataflow))
        skip = 0
    while True:
        empty, index = True, -1
        iterator = iter(dataflow[start:] if start else dataflow)
        while True:
            try:
                datapoint = next(iterator)
            except StopIteration:
                break
            except Exception as e:
                e.add_note(f"raised by {what} {type(dataflow).__name__} while producing datapoint "
                           f"{start + index + 1} of pass {pass_num}")
                raise
            empty, index = False, index + 1
            if skip:
                skip -= 1
                continue
            yield pass_num, start + index, datapoint
        if not start:
            empty_passes.end_pass(empty)
        pass_num, start = pass_num + 1, 0
