"""tensorpack 0.11's ``tensorpack.graph_builder.utils``: ``LeastLoadedDeviceSetter`` (stand-ins for
``allreduce_grads``, listed in ``_replaced``)."""
from __future__ import annotations

from typing import Any

import tensorflow as tf

from trainstack.towers import LeastLoadedPlacement

from .._replaced import stand_in_names, unprovided

__all__ = ["LeastLoadedDeviceSetter"] + stand_in_names(__name__)


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


__getattr__ = unprovided(__name__)
