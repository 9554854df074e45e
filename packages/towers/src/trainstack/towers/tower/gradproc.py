"""Gradient processors: transform ``[(grad, var), ...]`` between the tape and the optimizer.

Give them to a trainer by wrapping the model's optimizer::

    def optimizer(self):
        return apply_grad_processors(keras.optimizers.Adam(1e-3),
                                     [GlobalNormClip(5.0), SummaryGradient()])

The trainer recognizes the wrapper: ``trainer.optimizer`` is the Keras
optimizer inside (what hyperparameter setters change) and the processors run
in the traced step, in order, before ``apply_gradients``. Variables are
matched by :func:`~trainstack.callbacks.variables.variable_name` (``dense/kernel``).

An optimizer of TF1's API (``tf.compat.v1.train.AdamOptimizer``, ...) is refused by
:func:`check_optimizer`, with the Keras optimizer to use; ``trainstack.tensorpack``'s ModelDesc
and trainers turn it into a Keras optimizer running TF1's update rule.
"""
from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import tensorflow as tf

from trainstack.callbacks import add_moving_summary, add_tensor_summary
from trainstack.callbacks.variables import variable_name
from trainstack.loop.checks import check_number

__all__ = ["GradientProcessor", "FilterNoneGrad", "GlobalNormClip", "MapGradient", "ScaleGradient",
           "SummaryGradient", "ProcessedOptimizer", "apply_grad_processors", "unwrap_optimizer",
           "check_optimizer"]

logger = logging.getLogger("trainstack.towers")

GradsAndVars = list[tuple[Any, Any]]


class GradientProcessor:
    """Base class: :meth:`process` checks the pairs and calls ``_process`` under a name scope."""

    def process(self, grads_and_vars: Iterable[tuple[Any, Any]]) -> GradsAndVars:
        pairs = list(grads_and_vars)
        for i, pair in enumerate(pairs):
            if not (isinstance(pair, tuple) and len(pair) == 2):
                raise TypeError(f"{type(self).__name__}.process() takes (gradient, variable) pairs; "
                                f"item {i} is {pair!r}")
        with tf.name_scope(type(self).__name__):
            out = self._process(pairs)
        return list(out)

    def _process(self, grads_and_vars: GradsAndVars) -> GradsAndVars:
        return grads_and_vars

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class FilterNoneGrad(GradientProcessor):
    """Drop variables without a gradient (the cost does not depend on them); warn once each."""

    def __init__(self, verbose: bool = True) -> None:
        self.verbose = verbose
        self._warned: set[str] = set()

    def _process(self, grads_and_vars: GradsAndVars) -> GradsAndVars:
        missing = [variable_name(v) for g, v in grads_and_vars if g is None]
        new = [n for n in missing if n not in self._warned]
        if new and self.verbose:
            logger.warning("No gradient for %s: the cost does not depend on them; not updated.", new)
        self._warned.update(new)
        return [(g, v) for g, v in grads_and_vars if g is not None]


def _map_grad(grad: Any, fn: Callable[[tf.Tensor], tf.Tensor]) -> Any:
    if isinstance(grad, tf.IndexedSlices):
        return tf.IndexedSlices(fn(grad.values), grad.indices, grad.dense_shape)
    return fn(grad)


class GlobalNormClip(GradientProcessor):
    """Scale all gradients together so that their global norm is at most ``global_norm``
    (``tf.clip_by_global_norm``)."""

    def __init__(self, global_norm: float) -> None:
        self.global_norm = float(check_number("GlobalNormClip", "global_norm", global_norm, greater_than=0))

    def _process(self, grads_and_vars: GradsAndVars) -> GradsAndVars:
        grads = [g for g, _ in grads_and_vars]
        clipped, _ = tf.clip_by_global_norm(grads, self.global_norm, name="clip_by_global_norm")
        return [(c, v) for c, (_, v) in zip(clipped, grads_and_vars)]

    def __repr__(self) -> str:
        return f"GlobalNormClip({self.global_norm})"


class MapGradient(GradientProcessor):
    """Apply ``func(grad)`` or ``func(grad, var)`` to the gradients of variables whose name
    matches ``regex`` (``re.match``, so it anchors at the start); others are unchanged."""

    def __init__(self, func: Callable[..., Any], regex: str = ".*") -> None:
        if not callable(func):
            raise TypeError(f"MapGradient(func=...) must be callable, got {func!r}")
        self.func = func
        self.regex = re.compile(regex)
        try:
            import inspect
            self._two_args = len(inspect.signature(func).parameters) >= 2
        except (TypeError, ValueError):
            self._two_args = False

    def _process(self, grads_and_vars: GradsAndVars) -> GradsAndVars:
        out = []
        for g, v in grads_and_vars:
            if g is not None and self.regex.match(variable_name(v)):
                g = self.func(g, v) if self._two_args else self.func(g)
            out.append((g, v))
        return out


class ScaleGradient(MapGradient):
    """Multiply gradients by per-variable factors: ``[(regex, multiplier), ...]``.

    The first regex that matches a variable's name (``re.match``) gives its
    multiplier; variables matching none are unchanged. A single pair may be
    given without the list. With ``verbose``, the matches are logged once.
    """

    def __init__(self, multipliers: Sequence[tuple[str, float]] | tuple[str, float],
                 verbose: bool = True) -> None:
        if (isinstance(multipliers, tuple) and len(multipliers) == 2
                and isinstance(multipliers[0], str)):
            multipliers = [multipliers]
        checked = []
        for item in multipliers:
            if not (isinstance(item, (tuple, list)) and len(item) == 2 and isinstance(item[0], str)
                    and isinstance(item[1], (int, float)) and not isinstance(item[1], bool)):
                raise TypeError(f"ScaleGradient expects (regex, multiplier) pairs, got {item!r}")
            checked.append((re.compile(item[0]), float(item[1])))
        self.multipliers = checked
        self.verbose = verbose
        self._logged = False
        super().__init__(self._scale, ".*")
        self._two_args = True

    def _scale(self, grad: Any, var: Any) -> Any:
        name = variable_name(var)
        for regex, mult in self.multipliers:
            if regex.match(name):
                return _map_grad(grad, lambda g, m=mult: g * tf.cast(m, g.dtype))  # type: ignore[misc]  # m: bound now
        return grad

    def _process(self, grads_and_vars: GradsAndVars) -> GradsAndVars:
        if self.verbose and not self._logged:
            self._logged = True
            for _, v in grads_and_vars:
                name = variable_name(v)
                mult = next((m for r, m in self.multipliers if r.match(name)), None)
                if mult is not None:
                    logger.info("ScaleGradient: the gradient of %s is multiplied by %g.", name, mult)
        return super()._process(grads_and_vars)

    def __repr__(self) -> str:
        return f"ScaleGradient({[(r.pattern, m) for r, m in self.multipliers]})"


class SummaryGradient(GradientProcessor):
    """Summarize gradients: for each variable matching ``regex``, ``add_tensor_summary``
    of its gradient (``types``, default histogram and rms, reported as
    ``<var>-grad-histogram``, ``<var>-grad-rms``); and the moving average of
    the global gradient norm as ``grad_global_norm`` (``add_moving_summary``).
    Summaries are recorded only in the main training tower (the collection
    the trainer makes current while tracing it)."""

    def __init__(self, regex: str = ".*", types: Sequence[str] = ("histogram", "rms"),
                 global_norm: bool = True) -> None:
        self.regex = re.compile(regex)
        self.types = list(types)
        self.global_norm = global_norm

    def _process(self, grads_and_vars: GradsAndVars) -> GradsAndVars:
        grads = []
        for g, v in grads_and_vars:
            if g is None:
                continue
            grads.append(g)
            name = variable_name(v)
            if self.types and self.regex.match(name):
                dense = tf.convert_to_tensor(g)
                add_tensor_summary(dense, self.types, name=f"{name}-grad")
        if self.global_norm and grads:
            add_moving_summary(tf.linalg.global_norm(grads), name="grad_global_norm")
        return grads_and_vars


# -- the optimizer wrapper ------------------------------------------------------------------------
def _is_keras_optimizer(opt: Any) -> bool:
    return isinstance(opt, tf.keras.optimizers.Optimizer)


class ProcessedOptimizer:
    """A Keras optimizer plus gradient processors (made by :func:`apply_grad_processors`).

    Attribute access goes to the optimizer (``.learning_rate`` ...), and its
    ``apply_gradients`` processes the pairs first, so it also works outside trainers.
    """

    def __init__(self, optimizer: Any, processors: Sequence[GradientProcessor]) -> None:
        inner, inner_procs = unwrap_optimizer(optimizer)
        procs = list(processors)
        for p in procs:
            if not isinstance(p, GradientProcessor):
                raise TypeError(f"apply_grad_processors expects GradientProcessor instances, got {p!r}")
        self.optimizer = inner
        # the outer wrapper's processors run first, as they would with nested apply_gradients
        self.processors = [*procs, *inner_procs]

    def __getattr__(self, name: str) -> Any:
        if name in ("optimizer", "processors"):
            raise AttributeError(name)
        return getattr(self.optimizer, name)

    def process(self, grads_and_vars: Iterable[tuple[Any, Any]]) -> GradsAndVars:
        pairs = list(grads_and_vars)
        for p in self.processors:
            pairs = p.process(pairs)
        return pairs

    def apply_gradients(self, grads_and_vars: Iterable[tuple[Any, Any]]) -> Any:
        return self.optimizer.apply_gradients(self.process(grads_and_vars))

    def __repr__(self) -> str:
        return f"apply_grad_processors({type(self.optimizer).__name__}, {self.processors})"


def apply_grad_processors(opt: Any, processors: Sequence[GradientProcessor]) -> ProcessedOptimizer:
    """Wrap ``opt`` so that trainers run ``processors`` (in order) on the gradients."""
    if isinstance(processors, GradientProcessor):
        processors = [processors]
    check_optimizer(opt, "apply_grad_processors(opt)")
    return ProcessedOptimizer(opt, processors)


def unwrap_optimizer(opt: Any) -> tuple[Any, list[GradientProcessor]]:
    """``(keras_optimizer, processors)`` of an optimizer or a :class:`ProcessedOptimizer`.
    Anything else is returned as it is."""
    if isinstance(opt, ProcessedOptimizer):
        return opt.optimizer, list(opt.processors)
    return opt, []


#: the Keras optimizer for each TF1 optimizer class (named in check_optimizer's refusal)
_KERAS_FOR_TF1 = {"GradientDescentOptimizer": "keras.optimizers.SGD", "MomentumOptimizer":
                  "keras.optimizers.SGD(momentum=...)", "AdamOptimizer": "keras.optimizers.Adam",
                  "RMSPropOptimizer": "keras.optimizers.RMSprop", "AdagradOptimizer": "keras.optimizers.Adagrad",
                  "AdadeltaOptimizer": "keras.optimizers.Adadelta", "FtrlOptimizer": "keras.optimizers.Ftrl"}


def check_optimizer(opt: Any, what: str) -> None:
    """Raise a clear TypeError unless ``opt`` is a Keras optimizer or a ProcessedOptimizer. A TF1
    optimizer (``tf.compat.v1.train.*``) is refused with the Keras optimizer to use instead, and
    ``trainstack.tensorpack``, whose ModelDesc and trainers take it."""
    if isinstance(opt, ProcessedOptimizer) or _is_keras_optimizer(opt):
        return
    if isinstance(opt, tf.compat.v1.train.Optimizer):
        name = type(opt).__name__
        keras_name = _KERAS_FOR_TF1.get(name, "the keras.optimizers class of the same rule")
        raise TypeError(
            f"{what} gave {name}, an optimizer of TF1's API (tf.compat.v1.train), which trainstack's core does "
            f"not take: use {keras_name}, or the ModelDesc and trainers of trainstack.tensorpack (from "
            "trainstack.tensorpack import ModelDesc, SimpleTrainer), which run it as a Keras optimizer "
            "with TF1's update rule")
    raise TypeError(f"{what} must give a Keras optimizer (e.g. keras.optimizers.Adam(1e-3)), "
                    f"possibly wrapped by apply_grad_processors; got {opt!r} ({type(opt).__name__})")
