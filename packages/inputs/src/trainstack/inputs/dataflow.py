"""Dataflows: re-iterable Python objects yielding one datapoint per step.

The helpers live in ``trainstack.dataflow`` (with tensorpack's DataFlow
building blocks); this module keeps their old import path, and adds
:func:`close_workers`, which the input sources call when training ends.
"""
from __future__ import annotations

from typing import Any

from trainstack.dataflow.protocol import (
    dataflow_len_or_none,
    dataflow_size,
    numbered_passes,
    repeat_passes,
    reset_dataflow,
)

__all__ = ["dataflow_size", "dataflow_len_or_none", "reset_dataflow", "repeat_passes", "numbered_passes",
           "close_workers"]


def close_workers(dataflow: Any) -> None:
    """Stop the worker processes and threads that ``dataflow`` or the dataflows it wraps
    (``ds`` of a proxy, ``df_lists`` of a mix) started: trainstack's multi-process and
    multi-thread dataflows, and a :class:`~trainstack.inputs.RemoteDataFlow`'s connection.

    Called after training, whatever its outcome, so that no worker outlives the ``train()``
    that needed it; each of them starts again on its next ``reset_state()``. Other dataflows
    are left alone (a user's ``close()`` may be final, and tensorpack's DataFlows have none).
    """
    # imported here: a program whose dataflows start no workers does not load the worker machinery
    from trainstack.dataflow import MultiProcessDataFlow, MultiProcessMapData, MultiProcessRunner, MultiThreadMapData

    from .remote import RemoteDataFlow  # remote imports this module

    # trainstack's dataflows that start worker processes or threads (the ZMQ names are subclasses
    # or aliases of these); their close() stops them, and their reset_state() starts them again
    owners = (MultiProcessDataFlow, MultiProcessRunner, MultiProcessMapData, MultiThreadMapData, RemoteDataFlow)
    seen: set[int] = set()
    stack = [dataflow]
    while stack:
        df = stack.pop()
        if df is None or id(df) in seen:
            continue
        seen.add(id(df))
        if isinstance(df, owners):
            df.close()
        stack.append(getattr(df, "ds", None))
        stack.extend(getattr(df, "df_lists", None) or ())
