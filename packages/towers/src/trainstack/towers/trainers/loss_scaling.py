"""Loss scaling for mixed precision: the optimizer wrapped in Keras' LossScaleOptimizer."""
from __future__ import annotations

import contextlib
from typing import Any

import keras

from trainstack.callbacks import tf_private

__all__ = ["loss_scale_optimizer"]


def loss_scale_optimizer(optimizer: Any, who: str, has_grad_processors: bool) -> Any:
    """``optimizer`` wrapped for dynamic loss scaling (under the strategy it was made in), for
    trainer ``who``; refused with gradient processors (they would see scaled gradients) and
    outside a float16 compute dtype policy."""
    if has_grad_processors:
        raise ValueError(
            f"{who}(mixed_precision=True) with gradient processors: the processors would see "
            "scaled gradients (the LossScaleOptimizer unscales them only when it applies them). "
            "Use the optimizer's own clipnorm/clipvalue, or train without mixed_precision")
    if keras.config.dtype_policy().compute_dtype != "float16":
        raise ValueError(
            f"{who}(mixed_precision=True) scales the loss of a model computing in float16, but the "
            f"Keras dtype policy is {keras.config.dtype_policy().name!r}. Call "
            "keras.config.set_dtype_policy('mixed_float16') before creating the model's layers")
    if isinstance(optimizer, keras.optimizers.LossScaleOptimizer):
        return optimizer
    strategy = tf_private.optimizer_strategy(optimizer)
    with strategy.scope() if strategy is not None else contextlib.nullcontext():
        return keras.optimizers.LossScaleOptimizer(optimizer)
