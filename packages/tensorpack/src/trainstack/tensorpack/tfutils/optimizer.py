"""tensorpack 0.11's ``tensorpack.tfutils.optimizer``: optimizer wrappers.

``apply_grad_processors`` is ``trainstack.tensorpack.tf1``'s (the core's, also taking a TF1 optimizer).
The wrappers here take a Keras optimizer, a TF1 one (its Keras stand-in) or an already wrapped one, and
are what trainstack's trainers take (``ProcessedOptimizer``s). Each wraps one optimizer object: it
changes how that object applies gradients, and is made before training builds the optimizer.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tensorflow as tf

from trainstack.loop import check_int
from trainstack.tensorpack.tf1 import apply_grad_processors
from trainstack.towers import GradientProcessor, ProcessedOptimizer

from .._replaced import unprovided

__all__ = ["apply_grad_processors", "ProxyOptimizer", "PostProcessOptimizer", "VariableAssignmentOptimizer",
           "AccumGradOptimizer"]


def _keras_and_processors(opt: Any) -> tuple[Any, list[GradientProcessor]]:
    """The Keras optimizer (a TF1 optimizer's Keras stand-in) and the gradient processors of ``opt``."""
    wrapped = apply_grad_processors(opt, [])  # the TF1 room's: adapts a TF1 optimizer, checks the rest
    return wrapped.optimizer, list(wrapped.processors)


def _unbuilt_keras(opt: Any, who: str) -> tuple[Any, list[GradientProcessor]]:
    keras_opt, processors = _keras_and_processors(opt)
    if not hasattr(keras_opt, "apply_gradients") or not hasattr(keras_opt, "built"):
        raise TypeError(f"{who}(opt): opt must be a Keras or TF1 optimizer (or one wrapped by "
                        f"apply_grad_processors), got {opt!r}")
    if keras_opt.built:
        raise ValueError(f"{who}(opt): {keras_opt!r} has already been used to apply gradients; wrap it before "
                         "training, in ModelDesc.optimizer()")
    return keras_opt, processors


class ProxyOptimizer(ProcessedOptimizer):
    """An optimizer that delegates everything to ``opt`` (a base for wrappers)."""

    def __init__(self, opt: Any, name: str = "ProxyOptimizer") -> None:
        keras_opt, processors = _keras_and_processors(opt)
        super().__init__(keras_opt, processors)
        self._name = name


class PostProcessOptimizer(ProxyOptimizer):
    """After each update of the variables, calls ``func(var)`` for each updated variable (e.g. clipping or
    quantizing it; ``func`` assigns, or returns None). ``colocate`` is accepted (no effect, as in
    tensorpack since TF 1.13)."""

    def __init__(self, opt: Any, func: Callable[[Any], Any], colocate: bool = True) -> None:
        keras_opt, _ = _unbuilt_keras(opt, type(self).__name__)
        super().__init__(opt)
        if not callable(func):
            raise TypeError(f"{type(self).__name__}(func=...) must be callable, got {func!r}")
        self._func = func
        apply = keras_opt.apply_gradients

        def apply_then_post_process(grads_and_vars: Any, *args: Any, **kwargs: Any) -> Any:
            pairs = list(grads_and_vars)
            result = apply(pairs, *args, **kwargs)
            for _, var in pairs:
                func(var)
            return result

        keras_opt.apply_gradients = apply_then_post_process


class VariableAssignmentOptimizer(PostProcessOptimizer):
    """After each update, assigns ``func(var)`` to each updated variable (None: leaves it)."""

    def __init__(self, opt: Any, func: Callable[[Any], Any]) -> None:
        def assign(var: Any) -> Any:
            value = func(var)
            return None if value is None else var.assign(value)

        super().__init__(opt, assign)


class AccumGradSum(GradientProcessor):
    """Multiplies each gradient by ``niter``: Keras averages the accumulated gradients, tensorpack sums them."""

    def __init__(self, niter: int) -> None:
        self.niter = niter

    def _process(self, grads_and_vars: Any) -> Any:
        return [(None if g is None else g * tf.cast(self.niter, g.dtype), v) for g, v in grads_and_vars]


class AccumGradOptimizer(ProxyOptimizer):
    """Accumulates the gradients of ``niter`` steps and applies their sum at every ``niter``-th step
    (tensorpack's rule: about ``niter`` times the batch and ``niter`` times the learning rate, in the memory
    of one batch). The variables change only at steps ``niter``, ``2 * niter``, ...; the inner optimizer
    counts the applied updates (Adam's bias correction, as the TF1 optimizer tensorpack wrapped). Built on
    Keras' ``gradient_accumulation_steps``."""

    def __init__(self, opt: Any, niter: int) -> None:
        niter = check_int("AccumGradOptimizer", "niter", niter, minimum=1)
        keras_opt, processors = _unbuilt_keras(opt, "AccumGradOptimizer")
        if getattr(keras_opt, "gradient_accumulation_steps", None):
            raise ValueError(f"AccumGradOptimizer(opt): {keras_opt!r} already accumulates gradients "
                             f"(gradient_accumulation_steps={keras_opt.gradient_accumulation_steps})")
        ProcessedOptimizer.__init__(self, keras_opt, [*processors, AccumGradSum(niter)] if niter > 1 else processors)
        self._name = "AccumGrad"
        self._niter = niter
        if niter > 1:
            keras_opt.gradient_accumulation_steps = niter


__getattr__ = unprovided(__name__)
