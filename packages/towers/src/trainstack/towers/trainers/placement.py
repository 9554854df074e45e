"""Where the shared-variable trainers put the variables: LeastLoadedPlacement, shared_variable_scope.

The parameter-server and the asynchronous trainers keep one copy of each
variable: on the CPU, or spread over the towers' devices by load (greedy, as
tensorpack's ``LeastLoadedDeviceSetter``, which ``trainstack.tensorpack.graph_builder``
keeps as a subclass that is also a TF1 device function). :class:`LeastLoadedPlacement`
places variables for your own code too.
"""
from __future__ import annotations

import contextlib
import logging
import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from trainstack.callbacks.eager_state import made_outside_traces

from ..session.devices import resolve_devices

__all__ = ["LeastLoadedPlacement", "shared_variable_scope"]

logger = logging.getLogger("trainstack.towers")


class LeastLoadedPlacement:
    """Put each new variable on the least loaded of ``ps_devices``; compute on ``worker_device``.

    The load of a device is the number of elements of the variables placed on
    it so far. TF2's ``tf.device`` takes no device functions, so it is a
    context manager::

        with LeastLoadedPlacement("/gpu:0", ["/gpu:0", "/gpu:1"]):
            model_fn()      # ops on /gpu:0, variables spread over the two GPUs
    """

    def __init__(self, worker_device: Any, ps_devices: Sequence[Any]) -> None:
        self.worker_device = resolve_devices([worker_device], type(self).__name__)[0]
        self.ps_devices = resolve_devices(ps_devices, type(self).__name__)
        #: elements placed on each ps device so far
        self.ps_sizes = [0] * len(self.ps_devices)
        self._scopes: list[contextlib.ExitStack] = []

    def place(self, num_elements: int | None, name: str = "a variable") -> str:
        """The device for a variable of ``num_elements`` elements; counts it on that device."""
        index, _ = min(enumerate(self.ps_sizes), key=operator.itemgetter(1))
        if num_elements is None:
            logger.warning("%s: the shape of %s is not fully defined; it counts as empty.",
                           type(self).__name__, name)
            num_elements = 0
        self.ps_sizes[index] += int(num_elements)
        return self.ps_devices[index]

    # -- TF2: a context manager placing variables through a variable creator --------------------
    def __enter__(self) -> LeastLoadedPlacement:
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
                initial_value = kwargs["initial_value"] = initial_value()  # type: ignore[misc]  # callable: lift
        if shape is None and initial_value is not None:
            shape = getattr(initial_value, "shape", None)
            if shape is None:
                shape = np.shape(initial_value)
        num = tf.TensorShape(shape).num_elements() if shape is not None else None
        device = self.place(num, repr(kwargs.get("name")))
        if lift:
            with tf.init_scope(), tf.device(device):
                return made_outside_traces(next_creator, **kwargs)
        with tf.device(device):
            return next_creator(**kwargs)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.worker_device!r}, {self.ps_devices!r})"


def shared_variable_scope(ps_device: str, devices: Sequence[str]) -> Any:
    """Where a shared-variable trainer creates the model's variables: all on the CPU
    (``'cpu'``) or spread over ``devices`` by load (``'gpu'``)."""
    if ps_device == "cpu":
        return tf.device("/device:CPU:0")
    return LeastLoadedPlacement(devices[0], devices)
