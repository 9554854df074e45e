"""tensorpack 0.11's ``tensorpack.graph_builder.utils``: ``LeastLoadedDeviceSetter`` and
``allreduce_grads``."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import tensorflow as tf

from trainstack.towers import LeastLoadedPlacement

from .._replaced import stand_in_names, unprovided

__all__ = ["LeastLoadedDeviceSetter", "allreduce_grads"] + stand_in_names(__name__)


class LeastLoadedDeviceSetter(LeastLoadedPlacement):
    """tensorpack's ``LeastLoadedDeviceSetter(worker_device, ps_devices)``: the core's
    :class:`~trainstack.towers.LeastLoadedPlacement` (a context manager: TF2's ``tf.device`` takes
    no device functions), also callable as the TF1 device function tensorpack's was (an op to its
    device: a variable to the least loaded of ``ps_devices``, any other op to ``worker_device``), for
    ``tf.compat.v1.device(setter)`` in a TF1 graph::

        with LeastLoadedDeviceSetter("/gpu:0", ["/gpu:0", "/gpu:1"]):
            model_fn()      # ops on /gpu:0, variables spread over the two GPUs
    """

    _VARIABLE_OPS = ("Variable", "VariableV2", "VarHandleOp")

    def __call__(self, op: Any) -> str:
        if op.device:
            return op.device
        if op.type not in self._VARIABLE_OPS:
            return self.worker_device
        shape = op.get_attr("shape") if op.type == "VarHandleOp" else op.outputs[0].get_shape()
        return self.place(tf.TensorShape(shape).num_elements(), op.name)


def allreduce_grads(all_grads: Sequence[Sequence[Any]], average: bool, mode: str = "nccl") -> list[tuple[Any, ...]]:
    """All-reduce K towers' gradients of N variables (``all_grads``: K lists of N tensors), as tensorpack's:
    K tuples of N tensors, each the sum over the K towers (times ``1/K`` when ``average``), placed on the
    device of that tower's gradient; one tower is returned as it is.

    ``mode`` is tensorpack's transport, ``'nccl'`` or ``'collective'``: with ``'nccl'``, every gradient on a
    GPU and a graph being built (a traced step: TF2 runs NCCL ops only in graphs), NCCL's all-sum; otherwise
    each device adds the K gradients itself (``tf.add_n``, TensorFlow copying them over), the same values.
    """
    if mode not in ("nccl", "collective"):
        raise ValueError(f"allreduce_grads(mode=...) must be 'nccl' or 'collective', got {mode!r}")
    nr_tower = len(all_grads)
    if nr_tower == 1:
        return all_grads  # type: ignore[return-value]  # tensorpack returns one tower as it is
    if len({len(grads) for grads in all_grads}) != 1:
        raise ValueError(f"allreduce_grads: each tower must have the same number of gradients, got "
                         f"{[len(g) for g in all_grads]}")
    new_all_grads = []  # N x K
    for grads in zip(*all_grads):
        if mode == "nccl" and not tf.executing_eagerly() and _on_gpus(grads):
            from tensorflow.python.ops import nccl_ops  # noqa: PLC0415 - GPUs only; TF exports no public NCCL op

            summed = nccl_ops.all_sum(list(grads))
        else:
            summed = []
            for g in grads:
                with tf.device(g.device):
                    summed.append(tf.add_n(list(grads)))
        grads_for_devices = []
        for g in summed:
            with tf.device(g.device):
                if average:
                    g = tf.multiply(g, 1.0 / nr_tower)
            grads_for_devices.append(g)
        new_all_grads.append(grads_for_devices)
    return list(zip(*new_all_grads))


def _on_gpus(tensors: Sequence[Any]) -> bool:
    """Whether every tensor is placed on a GPU."""
    return all((tf.DeviceSpec.from_string(t.device or "").device_type or "").upper() == "GPU" for t in tensors)


__getattr__ = unprovided(__name__)
