"""TowerResult: what building one training tower gives, and the helpers over tower results."""
from __future__ import annotations

import contextlib
from typing import Any, NamedTuple

import tensorflow as tf

from ..tower.handles import TowerHandle
from ..tower.tower import TowerFunc

__all__ = ["TowerResult", "average_micro_batches", "check_cost", "on_device"]


class TowerResult(NamedTuple):
    """What building one training tower gives: its cost, its gradients and its handle."""

    cost: tf.Tensor
    grads_and_vars: list
    handle: TowerHandle


def average_micro_batches(micro: list[list[TowerResult]]) -> list[TowerResult]:
    """Each tower's result over its micro-batches: the mean cost and the mean gradients (the
    gradient of the mean cost over the micro-batches concatenated, for equal sizes); the last
    micro-batch's handle (what callbacks fetch from)."""
    def mean(grads: list[Any]) -> Any:
        if any(g is None for g in grads):
            return None
        return tf.add_n([tf.convert_to_tensor(g) for g in grads]) / len(grads)

    averaged = []
    for per_micro in zip(*micro):  # one tower, every micro-batch
        grads_and_vars = [(mean([r.grads_and_vars[i][0] for r in per_micro]), v)
                          for i, (_, v) in enumerate(per_micro[0].grads_and_vars)]
        cost = tf.add_n([r.cost for r in per_micro]) / len(per_micro)
        averaged.append(TowerResult(cost, grads_and_vars, per_micro[-1].handle))
    return averaged


def check_cost(cost: Any, tower_func: TowerFunc) -> tf.Tensor:
    try:
        cost = tf.convert_to_tensor(cost)
    except (TypeError, ValueError) as e:
        raise TypeError(f"tower function {tower_func!r} must return the cost (a scalar tensor), got "
                        f"{cost!r:.80}") from e
    if cost.shape.rank != 0 or not cost.dtype.is_floating:
        raise ValueError(f"tower function {tower_func!r} must return the cost as a floating-point scalar, "
                         f"got dtype {cost.dtype.name} and shape {cost.shape}")
    return cost


def on_device(device: str | None) -> Any:
    """``tf.device(device)``, or nothing for None (TensorFlow's placement)."""
    return tf.device(device) if device else contextlib.nullcontext()
