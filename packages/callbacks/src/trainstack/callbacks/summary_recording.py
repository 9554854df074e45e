"""Recording summaries inside a traced step: add_moving_summary, add_tensor_summary.

Each records into the collection :func:`~trainstack.callbacks.summary.get_summary_collection`
chooses (or the one given as ``collection=``); see :mod:`trainstack.callbacks.summary`.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import tensorflow as tf

from .summary import SUMMARY_TYPES, SummaryCollection, _check_collection, get_summary_collection
from .variables import is_variable

__all__ = ["add_moving_summary", "add_tensor_summary"]

#: the scope of a tower (``tower1/``), under the name scope of a tf.distribute replica (``replica_1/``)
_TOWER_PREFIX = re.compile(r"^(replica_[0-9]+/)?towerp?[0-9]+/")
_OUTPUT_INDEX = re.compile(r":[0-9]+$")


def _target(collection: Any, func: str) -> SummaryCollection | None:
    """Where ``func`` records: ``collection`` if given, else the current one (None: discard)."""
    collection = _check_collection(func, "collection", collection)
    return get_summary_collection() if collection is None else collection


@tf.autograph.experimental.do_not_convert
def add_moving_summary(*tensors: Any, decay: float = 0.95, collection: SummaryCollection | None = None,
                       summary_collections: None = None,
                       name: str | Sequence[str] | None = None) -> list[tf.Tensor]:
    """Keep a moving average of each scalar tensor; :class:`MovingAverageSummary` reports them.

    Call it inside the step function: the average is updated in the step's
    graph every time the step runs. Names come from ``name`` (a string for
    one tensor, a sequence for several), else from the tensor's name (inside
    a ``tf.function`` that is an op name such as ``Mean``, so prefer
    ``name=`` or ``tf.identity(x, name="cost")``), without the ``:0``
    output index and the ``towerN/`` prefix (also ``replica_N/towerN/``).

    ``collection``: where to record (default: :func:`get_summary_collection`).
    ``summary_collections`` (TF1 graph collections of summary ops) has no
    meaning in TF2 and must be None. Returns the updated averages (empty
    when the current scope discards summaries; in a step of several towers,
    where the trainer averages the towers' values before updating the
    average once, the values given).
    """
    if summary_collections is not None:
        raise TypeError("add_moving_summary(summary_collections=...) named TF1 graph collections; "
                        "TF2 has none. The averages are reported by MovingAverageSummary; use "
                        "collection= (a SummaryCollection) to record them elsewhere")
    names = _names_for(tensors, name, "add_moving_summary")
    target = _target(collection, "add_moving_summary")
    if target is None:
        return []
    return [target.add_moving_average(t, n, decay) for t, n in zip(tensors, names)]


@tf.autograph.experimental.do_not_convert
def add_tensor_summary(x: Any, types: str | Sequence[str], name: str | None = None,
                       collection: SummaryCollection | None = None) -> None:
    """Record summaries of ``x`` for :func:`MergeAllSummaries`.

    ``types``: any of ``scalar`` (``x`` itself, a scalar), ``histogram``,
    ``mean``, ``rms``, ``sparsity`` (fraction of zeros); they are reported
    as ``name``, ``name-histogram``, ``name-mean``, ... (as in tensorpack).
    Inside a step, the values are computed with the step and kept on the
    device in variables (a histogram as 35 numbers: range, count, sums and
    30 equal-width buckets), so only reporting moves data to the host. A
    variable is not copied at all: it is read when reported, so this may
    also be called outside the step.
    """
    if isinstance(types, str):
        types = [types]
    unknown = [t for t in types if t not in SUMMARY_TYPES]
    if unknown or not types:
        raise ValueError(f"add_tensor_summary(types=...): unknown {unknown or 'empty types'}; "
                         f"expected some of {list(SUMMARY_TYPES)}")
    base = _names_for((x,), name, "add_tensor_summary")[0]
    target = _target(collection, "add_tensor_summary")
    if target is None:
        return
    for typ in dict.fromkeys(types):
        target.add_summary(x, base, typ)


def _names_for(tensors: Sequence[Any], name: Any, func: str) -> list[str]:
    if not tensors:
        raise ValueError(f"{func}() got no tensors")
    if name is None:
        return [_tensor_name(t, func) for t in tensors]
    names = [name] if isinstance(name, str) else list(name)
    if len(names) != len(tensors) or not all(isinstance(n, str) and n for n in names):
        raise ValueError(f"{func}(name=...) must give one non-empty name per tensor "
                         f"({len(tensors)} tensors), got {name!r}")
    return names


def _tensor_name(t: Any, func: str) -> str:
    if is_variable(t) and not isinstance(t, tf.Variable):
        raw = getattr(t, "path", None) or getattr(t, "name", None)  # a Keras variable
    else:
        try:
            raw = t.name
        except (AttributeError, ValueError):  # eager tensors, Python numbers
            raw = None
    if not raw:
        raise ValueError(f"{func}(): {type(t).__name__} {t!r:.60} has no name (eager tensors and "
                         "Python numbers have none); pass name=")
    return _TOWER_PREFIX.sub("", _OUTPUT_INDEX.sub("", raw))
