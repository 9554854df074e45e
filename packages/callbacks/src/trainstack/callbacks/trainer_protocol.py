"""What the callbacks read from a trainer beyond the loop's ``Trainer``, declared once.

The loop's :class:`~trainstack.loop.Trainer` gives every callback the counters, ``monitors`` and
the hooked runs. Some callbacks of this layer also read what a trainer of a model has (the towers
layer's trainers have all three; a bare loop trainer may have none):

- ``checkpoint_objects``: what a checkpoint holds (the savers, ``CheckNumerics()`` without names,
  hyperparameters set by variable name);
- ``optimizer``: the optimizer whose hyperparameters ``OptimizerParam`` and ``NamedParam`` set;
- ``summary_collection``: where the trainer's steps record their summaries
  (``MovingAverageSummary``, ``MergeAllSummaries``; else the process-wide default).

:class:`ModelTrainer` declares them; :func:`declares` says whether a trainer has one, without
evaluating it (a trainer's ``checkpoint_objects`` exists only once its graph is built).
"""
from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any, Protocol, TypeGuard

from .summary import SummaryCollection

__all__ = ["ModelTrainer", "declares"]


class ModelTrainer(Protocol):
    """The members a callback may read from a trainer of a model (see the module docstring)."""

    @property
    def checkpoint_objects(self) -> Mapping[str, Any]: ...

    @property
    def optimizer(self) -> Any: ...

    @property
    def summary_collection(self) -> SummaryCollection: ...


_MEMBERS = frozenset({"checkpoint_objects", "optimizer", "summary_collection"})
_MISSING = object()


def declares(trainer: Any, member: str) -> TypeGuard[ModelTrainer]:
    """Whether ``trainer`` has the :class:`ModelTrainer` member ``member`` (looked up on its class
    and instance without running a property). For the type checker it narrows ``trainer`` to a
    ModelTrainer: read only the member asked for."""
    if member not in _MEMBERS:
        raise ValueError(f"declares(): {member!r} is not a ModelTrainer member; they are {sorted(_MEMBERS)}")
    return trainer is not None and inspect.getattr_static(trainer, member, _MISSING) is not _MISSING
