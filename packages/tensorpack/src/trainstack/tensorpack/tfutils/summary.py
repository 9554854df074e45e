"""tensorpack 0.11's ``tensorpack.tfutils.summary`` (from ``trainstack.callbacks`` and ``trainstack.tensorpack.tf1``;
``add_activation_summary`` is ``add_tensor_summary`` under the ``activation-summary`` scope, as tensorpack's)."""
from __future__ import annotations

from typing import Any

from trainstack.callbacks import add_moving_summary, add_tensor_summary, logger
from trainstack.tensorpack.tf1 import add_param_summary

from .._replaced import unprovided

__all__ = ["add_tensor_summary", "add_param_summary", "add_activation_summary", "add_moving_summary"]


def add_activation_summary(x: Any, types: list[str] | None = None, name: str | None = None,
                           collections: Any = None) -> None:
    """Summaries of an activation (``types``, default ``['sparsity', 'rms', 'histogram']``) reported as
    ``activation-summary/<name>-<type>`` (``name``: ``x``'s name); a scalar is warned and skipped, as tensorpack's."""
    if collections is not None:
        raise TypeError("add_activation_summary(collections=...): TF1 graph collections do not exist in "
                        "TensorFlow 2; leave it out (MergeAllSummaries reports the summaries)")
    ndim = x.shape.ndims
    if ndim is not None and ndim < 2:
        logger.warn(f"Cannot summarize scalar activation {getattr(x, 'name', x)}")
        return
    if types is None:
        types = ["sparsity", "rms", "histogram"]
    base = name if name is not None else str(getattr(x, "name", "x")).split(":")[0]
    add_tensor_summary(x, types, name="activation-summary/" + base)


__getattr__ = unprovided(__name__)
