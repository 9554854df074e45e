"""AsyncMultiGPUTrainer: shared variables; each tower applies its own gradients.

The variables are shared as in the parameter-server trainer (on the CPU for 4
towers or more, else spread over the towers' devices by load, as tensorpack
did). Every step, each tower computes its gradients from its own batch and
the optimizer applies them on its own: ``K`` updates per step, no averaging
(``optimizer.iterations`` grows by ``K``). With ``scale_gradient`` (default)
each tower's gradients are scaled by ``1/K`` first, so the effective learning
rate matches the synchronous trainers'. Gradient processors run on each
tower's gradients.

Within one step every tower reads the variables before any update is applied
(the updates run in tower order after all towers computed their gradients),
so the result does not depend on which device is faster.
"""
from __future__ import annotations

from typing import Any

import tensorflow as tf

from trainstack.loop.checks import check_bool

from .multigpu import MultiGPUTrainerBase
from .placement import shared_variable_scope
from .step_options import StepOptions
from .tower_result import TowerResult

__all__ = ["AsyncMultiGPUTrainer"]


class AsyncMultiGPUTrainer(MultiGPUTrainerBase):
    """Data-parallel training where each tower updates the shared variables itself; see the
    module docstring.

    ``gpus``: a count, device indices or device names; ``scale_gradient``: scale
    each tower's gradients by ``1/K``. The older form ``(config, scale_gradient=True)`` is
    ``trainstack.tensorpack``'s.
    """

    def __init__(self, gpus: Any, scale_gradient: bool = True, *,
                 options: StepOptions | None = None, **step_options: Any) -> None:
        scale_gradient = check_bool(type(self).__name__, "scale_gradient", scale_gradient)
        self.scale_gradient = scale_gradient
        super().__init__(gpus, options=options, **step_options)
        #: where the shared variables live (tensorpack's choice: the CPU from 4 towers on)
        self.ps_device = "cpu" if len(self.devices) >= 4 else "gpu"

    def _variable_scope(self) -> Any:
        return shared_variable_scope(self.ps_device, self.devices)

    def _apply_towers(self, results: list[TowerResult]) -> Any:
        if not self._trains:
            return results[0].cost
        scale = 1.0 / len(results) if self.scale_gradient and len(results) > 1 else None
        for k, result in enumerate(results):
            grads_and_vars = result.grads_and_vars
            if scale is not None:
                grads_and_vars = [(None if g is None else _scale(g, scale), v) for g, v in grads_and_vars]
            with tf.name_scope(f"apply_tower{k}"):
                self._apply_gradients(grads_and_vars)
        return results[0].cost


def _scale(grad: Any, scale: float) -> Any:
    if isinstance(grad, tf.IndexedSlices):
        return tf.IndexedSlices(grad.values * tf.cast(scale, grad.values.dtype), grad.indices,
                                grad.dense_shape)
    return grad * tf.cast(scale, grad.dtype)
