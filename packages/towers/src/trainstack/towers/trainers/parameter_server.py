"""SyncMultiGPUTrainerParameterServer: shared variables, gradients averaged where each variable lives.

There is one copy of every variable, on a "parameter server" device:

- ``ps_device='cpu'``: all on the CPU (``/device:CPU:0``);
- ``ps_device='gpu'``: spread over the towers' devices, each new variable on
  the device holding the fewest elements so far (greedy, as tensorpack's
  ``LeastLoadedDeviceSetter``); the optimizer's slots go beside their variable;
- None (default): ``'gpu'`` for up to 2 towers, else ``'cpu'`` (tensorpack's heuristic).

One step: tower ``k`` computes its gradients on device ``k`` from its own
batch; each variable's gradients are averaged on that variable's device; the
optimizer applies the averages once (gradient processors see the averages).

:class:`~trainstack.towers.trainers.placement.LeastLoadedPlacement` (placement.py) places
variables by load for your own code too. tensorpack's ``SyncMultiGPUTrainer(gpus)`` is this trainer
with ``ps_device='cpu'`` (``trainstack.tensorpack``'s).
"""
from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence
from typing import Any

import tensorflow as tf

from .multigpu import MultiGPUTrainerBase
from .placement import shared_variable_scope
from .step_options import StepOptions
from .tower_result import TowerResult

__all__ = ["SyncMultiGPUTrainerParameterServer", "average_gradients"]

logger = logging.getLogger("trainstack.towers")

PS_DEVICES = ("cpu", "gpu")


def average_gradients(grad_lists: Sequence[Sequence[tuple[Any, tf.Variable]]],
                      average: bool = True) -> list[tuple[Any, tf.Variable]]:
    """Sum (and with ``average`` divide by their number) the towers' gradients of each variable,
    on that variable's device. ``grad_lists[k]`` is tower ``k``'s ``[(grad, var), ...]``, the
    variables in the same order in every tower; a variable without gradient keeps ``None``."""
    count = len(grad_lists)
    out = []
    for pairs in zip(*grad_lists):
        var = pairs[0][1]
        grads = [g for g, _ in pairs]
        if any(g is None for g in grads):
            out.append((None, var))
            continue
        with tf.device(var.device), tf.name_scope("average_gradients"):
            if any(isinstance(g, tf.IndexedSlices) for g in grads):
                slices = [tf.convert_to_tensor(g) if not isinstance(g, tf.IndexedSlices) else g
                          for g in grads]
                if all(isinstance(g, tf.IndexedSlices) for g in slices):
                    total = tf.IndexedSlices(tf.concat([g.values for g in slices], 0),
                                             tf.concat([g.indices for g in slices], 0),
                                             slices[0].dense_shape)
                    if average:
                        total = tf.IndexedSlices(total.values / count, total.indices, total.dense_shape)
                    out.append((total, var))
                    continue
                grads = [tf.convert_to_tensor(g) for g in grads]
            total = tf.add_n(grads)
            out.append((total / tf.cast(count, total.dtype) if average and count > 1 else total, var))
    return out


class SyncMultiGPUTrainerParameterServer(MultiGPUTrainerBase):
    """Data-parallel training with shared variables on a parameter-server device; see the module
    docstring.

    ``gpus``: a count, device indices or device names; ``ps_device``: ``'cpu'``,
    ``'gpu'`` or None. The older form ``(config, ps_device='gpu', gpu_prefetch=True)`` is
    ``trainstack.tensorpack``'s.
    """

    def __init__(self, gpus: Any, ps_device: str | None = None, *,
                 options: StepOptions | None = None, **step_options: Any) -> None:
        if ps_device is not None and ps_device not in PS_DEVICES:
            raise ValueError(f"{type(self).__name__}(ps_device=...) must be 'cpu', 'gpu' or None, "
                             f"got {ps_device!r}")
        super().__init__(gpus, options=options, **step_options)
        #: where the variables live: ``'cpu'``, or ``'gpu'`` (spread over the towers' devices)
        self.ps_device: str = ps_device or ("gpu" if len(self.devices) <= 2 else "cpu")

    def _variable_scope(self) -> Any:
        return shared_variable_scope(self.ps_device, self.devices)

    def _apply_towers(self, results: list[TowerResult]) -> Any:
        if self._trains:
            averaged = average_gradients([r.grads_and_vars for r in results])
            with tf.device("/device:CPU:0") if self.ps_device == "cpu" else contextlib.nullcontext():
                self._apply_gradients(averaged)
        return results[0].cost

