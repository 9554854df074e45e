"""tensorpack 0.11's ``tensorpack.tfutils.model_utils``: describing variables and shapes."""
from __future__ import annotations

from typing import Any

import tensorflow as tf

from trainstack.callbacks import logger

from .._replaced import unprovided

__all__ = ["describe_trainable_vars", "get_shape_str"]


def describe_trainable_vars(variables: Any = None) -> None:
    """Log a table of the trainable variables (name, shape, number of elements) and their total, as
    tensorpack's. They are ``tf.compat.v1.trainable_variables()`` (in ``build_graph``: the model's), or
    ``variables`` (e.g. ``trainer.tower_func.variables``) where TensorFlow 2 has no graph collection."""
    train_vars = list(variables) if variables is not None else tf.compat.v1.trainable_variables()
    if not train_vars:
        logger.warn("No trainable variables in the graph!")
        return
    total = total_bytes = 0
    rows = []
    for v in train_vars:
        name = str(getattr(v, "path", None) or v.name).split(":")[0]
        if name.startswith("tower"):
            continue
        shape = v.shape
        ele = shape.num_elements() or 0
        total += ele
        total_bytes += ele * tf.as_dtype(v.dtype).size
        rows.append((name, str(shape.as_list()), str(ele)))
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(("name", "shape", "#elements"))]
    lines = ["  ".join(h.ljust(w) for h, w in zip(("name", "shape", "#elements"), widths, strict=True)),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    logger.info("List of Trainable Variables: \n" + "\n".join(lines)
                + f"\nNumber of trainable variables: {len(rows)}"
                + f"\nNumber of parameters (elements): {total}"
                + f"\nStorage space needed for all trainable variables: {total_bytes / 1024.0 ** 2:.02f}MB")


def get_shape_str(tensors: Any) -> str:
    """The shape(s) as tensorpack's layer logs wrote them: ``[?, 28, 28, 1]``, joined by ``, `` for a list."""
    if isinstance(tensors, list | tuple):
        return ", ".join(map(get_shape_str, tensors))
    if not isinstance(tensors, tf.Tensor | tf.Variable) and not hasattr(tensors, "shape"):
        raise AssertionError(f"Not a tensor: {type(tensors)}")
    return str(tf.TensorShape(tensors.shape).as_list()).replace("None", "?")


__getattr__ = unprovided(__name__)
