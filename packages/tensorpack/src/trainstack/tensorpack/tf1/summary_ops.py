"""What a TF1 summary becomes in a tower: a tensor the step computes only when it is written.

In tensorpack's TF1 graph, ``tf.summary.image('samples', x)`` in ``build_graph`` made
ops that ``MergeAllSummaries`` ran together with the steps it wrote after (once an epoch
by default): the other steps did not compute them. Here the same call builds, in the
main training tower, the tensor the summary shows (the scalar, the images as NHWC
uint8, the histogram's statistics, the text) as an identity named after the summary,
and records its name in the trainer's ``SummaryCollection``
(:meth:`~trainstack.callbacks.SummaryCollection.add_fetched_summary`).
``MergeAllSummaries`` fetches it from the steps it writes after; a step that fetches
nothing does not compute it, nor what only it needs: TensorFlow prunes the ops no
output asks for. Ops with effects (a ``tf.print``, a variable update, a stateful
``tf.py_function``) run on every step, as anywhere in a ``tf.function``.

Tags are the name under the name scopes opened in the tower (the tower's own scope left
out), as both APIs made them; ``tf.compat.v1.summary.*`` makes them as TF1 did: unique in
the tower (``_1``, ``_2``... appended when the name scope was taken), and
``<family>/<scope>/<family>/<name>`` with ``family=``.
"""
from __future__ import annotations

import re
from typing import Any

import tensorflow as tf

from trainstack.callbacks import get_summary_collection
from trainstack.callbacks.summary import histogram_stats
from trainstack.loop.checks import check_int

from .switch import TF1CallError

__all__ = ["record", "tag_outside_towers", "scalar_value", "image_value", "histogram_value", "text_value"]

#: characters a name scope refuses (TF1's clean_tag kept any word character)
_NOT_IN_SCOPE = re.compile(r"[^A-Za-z0-9_.\-/]")

IN_BRANCH = ("tf.{api}({name!r}) was called inside a tf.cond / tf.while_loop condition in tower "
             "{tower!r}: a summary there cannot be fetched by the step. Compute the value in the "
             "branch, return it, and summarize it after the tf.cond")


def _scope_name(name: Any) -> str:
    """``name`` as a name scope takes it (TF1's clean_tag, for a name scope's alphabet)."""
    cleaned = re.sub("/+", "/", _NOT_IN_SCOPE.sub("_", str(name))).strip("/") or "summary"
    if not tf.get_current_name_scope() and not re.match(r"[A-Za-z0-9.]", cleaned):
        cleaned = "summary" + cleaned  # a top-level scope starts with a letter, digit or dot
    return cleaned


def _relative(full: str, ns_name: str) -> str:
    """``full`` without the tower's name scope ``ns_name`` in front."""
    return full[len(ns_name) + 1:] if ns_name and full.startswith(ns_name + "/") else full


def _in_xla(graph: Any) -> bool:
    """Whether ``graph`` is traced to be compiled with XLA (``tf.function(jit_compile=True)``)."""
    try:
        from tensorflow.python.ops import control_flow_util  # noqa: PLC0415 - internal, guarded

        return bool(control_flow_util.GraphOrParentsInXlaContext(graph))
    except (ImportError, AttributeError):  # pragma: no cover - TensorFlow internals moved
        return False


def _in_branch(graph: Any) -> bool:
    """Whether ``graph`` is a tf.cond branch or a while loop's condition: nothing built there can
    be fetched (the trainers build their towers in neither)."""
    return type(graph).__name__ in ("CondBranchFuncGraph", "WhileCondFuncGraph")


def record(tower: Any, api: str, kind: str, name: Any, value: Any, family: str | None = None,
           tf1: bool = False) -> bool:
    """Build summary ``name`` of kind ``kind`` in ``tower`` (a TowerContext) from ``value`` (a
    function returning the tensor to show, called in the summary's name scope) and record it
    for ``MergeAllSummaries``. Returns False, building nothing, outside the main training tower
    or where the summaries are discarded (``summary_collection_scope(None)``: the other towers
    of a multi-tower step, a first build that only creates the variables). ``api`` names the
    call in errors (``summary.image``, ``compat.v1.summary.scalar``); ``tf1``: TF1's tags."""
    collection = get_summary_collection()
    if collection is None or not tower.is_main_training_tower:
        return False
    if _in_branch(tf.compat.v1.get_default_graph()):
        raise TF1CallError(IN_BRANCH.format(api=api, name=name, tower=tower.name))
    base = _scope_name(name if family is None else f"{family}/{name}")
    outer = tf.get_current_name_scope()
    with tf.name_scope(base) as scope:  # unique: a name scope taken gets "_1"
        tensor = tf.identity(value(), name="value")
    if tf1:  # TF1's tag: the unique scope
        tag = _relative(scope.rstrip("/"), tower.ns_name)
        tag = tag if family is None else f"{_scope_name(family)}/{tag}"
    else:  # TensorFlow 2's: the name under the scope
        tag = _relative(f"{outer}/{name}" if outer else str(name), tower.ns_name)
    collection.add_fetched_summary(tag, kind, _relative(tensor.op.name, tower.ns_name))
    return True


def tag_outside_towers(name: Any, family: str | None = None) -> str:
    """The tag of a summary made outside any tower (eagerly, e.g. in ``optimizer()``)."""
    base = _scope_name(name if family is None else f"{family}/{name}")
    scope = tf.get_current_name_scope()
    tag = f"{scope}/{base}" if scope else base
    return f"{_scope_name(family)}/{tag}" if family is not None else tag


# -- what each kind shows ----------------------------------------------------------------------------
def scalar_value(api: str, name: Any, data: Any) -> tf.Tensor:
    """A real or boolean scalar, as float32."""
    t = tf.convert_to_tensor(data)
    if not (t.dtype.is_floating or t.dtype.is_integer or t.dtype.is_bool):
        raise TypeError(f"tf.{api}({name!r}, ...) takes a number, got dtype {t.dtype.name}")
    if t.shape.rank is not None and t.shape.rank != 0:
        raise ValueError(f"tf.{api}({name!r}, ...) takes a scalar, got shape {t.shape}; "
                         "reduce it (tf.reduce_mean) or use tf.summary.histogram")
    return tf.cast(tf.reshape(t, []), tf.float32)


def histogram_value(api: str, name: Any, data: Any, buckets: int | None = None) -> tf.Tensor:
    """The statistics MergeAllSummaries turns into a TensorBoard histogram: range, count, sums
    and ``buckets`` (default 30, as TensorFlow's) equal-width bucket counts of the finite values."""
    buckets = 30 if buckets is None else check_int(f"tf.{api}", "buckets", buckets, minimum=1)
    t = tf.convert_to_tensor(data)
    if not (t.dtype.is_floating or t.dtype.is_integer or t.dtype.is_bool):
        raise TypeError(f"tf.{api}({name!r}, ...) takes numbers, got dtype {t.dtype.name}")
    return histogram_stats(t, buckets)


def image_value(api: str, name: Any, data: Any, max_outputs: int, tf1_scaling: bool) -> tf.Tensor:
    """The first ``max_outputs`` images of NHWC ``data`` (1, 3 or 4 channels) as uint8. Floats are
    scaled as the API did: tf.compat.v1 per image (non-negative: the largest value becomes 255;
    else 0 becomes 128 and the largest magnitude 127 away; non-finite pixels red), tf.summary
    clipped to [0, 1] and scaled to [0, 255]."""
    max_outputs = check_int(f"tf.{api}", "max_outputs", max_outputs, minimum=1)
    t = tf.convert_to_tensor(data)
    rank, channels = t.shape.rank, (t.shape[-1] if t.shape.rank else None)
    if (rank is not None and rank != 4) or (channels is not None and channels not in (1, 3, 4)):
        raise ValueError(f"tf.{api}({name!r}, ...) takes images of shape [batch, height, width, channels] "
                         f"with 1, 3 or 4 channels, got shape {t.shape}")
    t = t[:max_outputs]
    if t.dtype == tf.uint8:
        return t
    if not tf1_scaling:
        return tf.image.convert_image_dtype(t, tf.uint8, saturate=True)
    return _tf1_image_scaling(t)


def _tf1_image_scaling(images: tf.Tensor) -> tf.Tensor:
    """TF1's ImageSummary kernel, per image: see :func:`image_value`."""
    x = tf.cast(images, tf.float32)
    finite = tf.math.is_finite(x)
    lo = tf.reduce_min(tf.where(finite, x, float("inf")), axis=[1, 2, 3], keepdims=True)
    hi = tf.reduce_max(tf.where(finite, x, float("-inf")), axis=[1, 2, 3], keepdims=True)
    negative = lo < 0
    largest = tf.maximum(tf.abs(lo), tf.abs(hi))
    scale = tf.where(negative, tf.where(largest < 1e-6, 0.0, 127.0 / largest),
                     tf.where(hi < 1e-6, 0.0, 255.0 / hi))
    offset = tf.where(negative, 128.0, 0.0)
    scaled = tf.where(finite, x * scale + offset, 0.0)
    bad = tf.constant([255, 0, 0, 255], tf.uint8)[:tf.shape(x)[-1]]  # TF1's bad_color
    return tf.where(finite, tf.cast(scaled, tf.uint8), bad)


def text_value(api: str, name: Any, data: Any) -> tf.Tensor:
    """A string tensor, any shape (not in a step compiled with XLA, which has no strings)."""
    t = tf.convert_to_tensor(data)
    if t.dtype != tf.string:
        raise TypeError(f"tf.{api}({name!r}, ...) takes strings, got dtype {t.dtype.name}")
    if _in_xla(tf.compat.v1.get_default_graph()):
        raise TF1CallError(f"tf.{api}({name!r}, ...) in a step compiled with XLA (xla_compile=True): "
                           "XLA computes no strings. Write the text from a callback "
                           "(self.trainer.monitors.put_event), or train without xla_compile")
    return t
