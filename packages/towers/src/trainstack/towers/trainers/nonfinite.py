"""Skipping a step whose gradients are not finite (``skip_nonfinite_steps=True`` on a trainer).

One bad batch (a NaN in the data, an overflow) should not end a long run nor poison
the weights: the step's update is applied only when every gradient is finite; otherwise
the weights and the optimizer's state stay as they were, a counter in the graph
counts the step, and :class:`SkippedStepsReport` logs it (naming the step) and puts
``skipped_steps`` into the monitors. Without the option a NaN reaches the weights, and
``TerminateOnNaN`` / the savers stop training (see the callbacks layer).
"""
from __future__ import annotations

import logging
from typing import Any, Sequence

import tensorflow as tf

from trainstack.loop import Callback

__all__ = ["apply_if_finite", "SkippedStepsReport"]

logger = logging.getLogger("trainstack.towers")


def apply_if_finite(optimizer: Any, grads_and_vars: Sequence[tuple[Any, Any]], skipped: tf.Variable) -> None:
    """In the traced step: ``optimizer.apply_gradients(grads_and_vars)`` when every gradient is
    finite, else nothing but ``skipped += 1``."""
    finite = tf.reduce_all([tf.reduce_all(tf.math.is_finite(tf.convert_to_tensor(g)))
                            for g, _ in grads_and_vars])

    def apply() -> tf.Tensor:
        optimizer.apply_gradients(grads_and_vars)
        return tf.constant(0, tf.int64)

    skipped.assign_add(tf.cond(finite, apply, lambda: tf.constant(1, tf.int64)))


class SkippedStepsReport(Callback):
    """Logs each step a trainer skipped for non-finite gradients (its global step and the count so
    far), and puts the count into the monitors as ``skipped_steps`` at each epoch's end."""

    _chief_only = False

    def __init__(self, skipped: tf.Variable) -> None:
        self.skipped = skipped
        self._seen = 0

    def _before_train(self) -> None:
        self._seen = int(self.skipped.numpy())

    def _trigger_step(self) -> None:
        count = int(self.skipped.numpy())
        if count > self._seen:
            logger.warning("global step %d: the gradients were not finite (NaN or Inf); the step was "
                           "skipped, the weights are unchanged (%d step(s) skipped in this run).",
                           self.global_step, count)
            self._seen = count

    def _trigger_epoch(self) -> None:
        self.trainer.monitors.put_scalar("skipped_steps", int(self.skipped.numpy()))
