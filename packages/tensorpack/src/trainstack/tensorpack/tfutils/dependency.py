"""tensorpack 0.11's ``tensorpack.tfutils.dependency``: whether an op is among the ops that targets (or a
``Session.run`` fetch structure) depend on, in the graph they live in: a TF1 graph, the TF1 room's callback graph,
or a ``tf.function``'s graph while it is traced."""
from __future__ import annotations

from typing import Any

import tensorflow as tf

from .._replaced import stand_in_names, unprovided

__all__ = ["dependency_of_targets", "dependency_of_fetches"] + stand_in_names(__name__)


def dependency_of_targets(targets: tuple[Any, ...], op: Any) -> bool:
    """Whether ``op`` (a ``tf.Operation`` or ``tf.Tensor``) is in the subgraph the ``targets`` (ops or tensors)
    depend on, control inputs included, as tensorpack's (which memoized it per graph; this computes it each
    call, keeping no graph alive)."""
    from tensorflow.python.ops.op_selector import get_backward_walk_ops  # noqa: PLC0415 - TF's own walk

    if isinstance(op, tf.Tensor):
        op = op.op
    if not isinstance(op, tf.Operation):
        raise TypeError(f"dependency_of_targets: op must be a tf.Operation or a graph tf.Tensor, got {op!r}")
    # ops, whether given as ops or tensors (TF's walk takes a list of one kind only)
    seeds = [t.op if isinstance(t, tf.Tensor) else t for t in targets]
    return op in get_backward_walk_ops(seeds, control_inputs=True)


def dependency_of_fetches(fetches: Any, op: Any) -> bool:
    """Whether any of ``fetches`` (what ``Session.run`` takes: a tensor, an op, a name, or lists, tuples and
    dicts of them) depends on ``op``, as tensorpack's (which failed on fetches mixing tensors and ops)."""
    from tensorflow.python.client.session import _FetchHandler  # noqa: PLC0415 - how Session.run parses fetches

    graph = op.graph
    handler = _FetchHandler(graph, fetches, {})
    return dependency_of_targets(tuple(handler.fetches() + handler.targets()), op)


__getattr__ = unprovided(__name__)
