"""SyncMultiGPUTrainerParameterServer: shared variables, gradients averaged where each variable lives.

There is one copy of every variable, on a "parameter server" device:

- ``ps_device='cpu'``: all on the CPU (``/device:CPU:0``);
- ``ps_device='gpu'``: spread over the towers' devices, each new variable on
  the device holding the fewest elements so far (greedy, as tensorpack's
  :class:`LeastLoadedDeviceSetter`); the optimizer's slots go beside their variable;
- None (default): ``'gpu'`` for up to 2 towers, else ``'cpu'`` (tensorpack's heuristic).

One step: tower ``k`` computes its gradients on device ``k`` from its own
batch; each variable's gradients are averaged on that variable's device; the
optimizer applies the averages once (gradient processors see the averages).

:class:`LeastLoadedDeviceSetter` places variables by load for your own code too.
"""
from __future__ import annotations

import contextlib
import logging
import operator
from typing import Any, Callable, Sequence

import numpy as np
import tensorflow as tf

from .config import TrainConfig
from .devices import resolve_devices
from .multigpu import MultiGPUTrainerBase
from .trainer import TowerResult

__all__ = ["SyncMultiGPUTrainerParameterServer", "LeastLoadedDeviceSetter", "average_gradients"]

logger = logging.getLogger("trainstack.towers")

PS_DEVICES = ("cpu", "gpu")


class LeastLoadedDeviceSetter:
    """Put each new variable on the least loaded of ``ps_devices``; compute on ``worker_device``.

    The load of a device is the number of elements of the variables placed on
    it so far. TF2's ``tf.device`` takes no device functions, so use it as a
    context manager::

        with LeastLoadedDeviceSetter("/gpu:0", ["/gpu:0", "/gpu:1"]):
            model_fn()      # ops on /gpu:0, variables spread over the two GPUs

    For TF1-style graphs (``tf.compat.v1``), the object is also the device
    function of ``tf.compat.v1.device(setter)``.
    """

    _VARIABLE_OPS = ("Variable", "VariableV2", "VarHandleOp")

    def __init__(self, worker_device: Any, ps_devices: Sequence[Any]) -> None:
        self.worker_device = resolve_devices([worker_device], "LeastLoadedDeviceSetter")[0]
        self.ps_devices = resolve_devices(ps_devices, "LeastLoadedDeviceSetter")
        #: elements placed on each ps device so far
        self.ps_sizes = [0] * len(self.ps_devices)
        self._scopes: list[contextlib.ExitStack] = []

    def place(self, num_elements: int | None, name: str = "a variable") -> str:
        """The device for a variable of ``num_elements`` elements; counts it on that device."""
        index, _ = min(enumerate(self.ps_sizes), key=operator.itemgetter(1))
        if num_elements is None:
            logger.warning("LeastLoadedDeviceSetter: the shape of %s is not fully defined; it counts as "
                           "empty.", name)
            num_elements = 0
        self.ps_sizes[index] += int(num_elements)
        return self.ps_devices[index]

    # -- TF2: a context manager placing variables through a variable creator --------------------
    def __enter__(self) -> "LeastLoadedDeviceSetter":
        stack = contextlib.ExitStack()
        stack.enter_context(tf.device(self.worker_device))
        stack.enter_context(tf.variable_creator_scope(self._creator))
        self._scopes.append(stack)
        return self

    def __exit__(self, *exc: Any) -> None:
        self._scopes.pop().close()

    def _creator(self, next_creator: Callable[..., Any], **kwargs: Any) -> Any:
        initial_value = kwargs.get("initial_value")
        shape = kwargs.get("shape")
        lift = callable(initial_value) and shape is None
        if lift:
            # the size is known once the initializer ran: run it once, outside any function being
            # traced, and create the variable there too (a function could not lift it)
            with tf.init_scope():
                initial_value = kwargs["initial_value"] = initial_value()
        if shape is None and initial_value is not None:
            shape = getattr(initial_value, "shape", None)
            if shape is None:
                shape = np.shape(initial_value)
        num = tf.TensorShape(shape).num_elements() if shape is not None else None
        device = self.place(num, repr(kwargs.get("name")))
        with tf.init_scope() if lift else contextlib.nullcontext(), tf.device(device):
            return next_creator(**kwargs)

    # -- TF1 graphs: a device function ---------------------------------------------------------
    def __call__(self, op: Any) -> str:
        if op.device:
            return op.device
        if op.type not in self._VARIABLE_OPS:
            return self.worker_device
        shape = op.get_attr("shape") if op.type == "VarHandleOp" else op.outputs[0].get_shape()
        return self.place(tf.TensorShape(shape).num_elements(), op.name)

    def __repr__(self) -> str:
        return f"LeastLoadedDeviceSetter({self.worker_device!r}, {self.ps_devices!r})"


def shared_variable_scope(ps_device: str, devices: Sequence[str]) -> Any:
    """Where a shared-variable trainer creates the model's variables: all on the CPU
    (``'cpu'``) or spread over ``devices`` by load (``'gpu'``)."""
    if ps_device == "cpu":
        return tf.device("/device:CPU:0")
    return LeastLoadedDeviceSetter(devices[0], devices)


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
    ``'gpu'`` or None. The older form ``SyncMultiGPUTrainerParameterServer(config,
    ps_device='gpu', gpu_prefetch=True)`` also works (compat_multigpu.py).
    """

    def __init__(self, gpus: Any, ps_device: str | None = None, *, xla_compile: bool | None = None,
                 **legacy: Any) -> None:
        from .compat_multigpu import legacy_options  # noqa: PLC0415 - the older API only

        if isinstance(gpus, TrainConfig):
            options = legacy_options(type(self).__name__, "(config, ps_device='gpu', gpu_prefetch=True)",
                                     legacy, {"gpu_prefetch": True})
            self.gpu_prefetch = bool(options["gpu_prefetch"])
            ps_device = "gpu" if ps_device is None else ps_device
        else:
            legacy_options(type(self).__name__, None, legacy, {})
        if ps_device is not None and ps_device not in PS_DEVICES:
            raise ValueError(f"{type(self).__name__}(ps_device=...) must be 'cpu', 'gpu' or None, "
                             f"got {ps_device!r}")
        super().__init__(gpus, xla_compile=xla_compile)
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
