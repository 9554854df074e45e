"""Stopping the processes of one job together on SIGTERM or Ctrl-C.

A process that gets the signal cannot simply stop after its current step, as a
single process does (trainstack.loop's interrupt.py): the others would wait for
it in their next all-reduce until Horovod or the collective times out. The
trainers here put the request into the next step's gradient all-reduce
instead; after that step every process sees it and stops, the chief's savers
save that very step, and every process exits: the signalled one with its
signal's status, the others with SIGTERM's (they were stopped from elsewhere).
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import tensorflow as tf

from trainstack.loop import second_signal_hint, stop_after_this_step

__all__ = ["AgreedInterrupt"]

logger = logging.getLogger("trainstack.distributed")


class AgreedInterrupt:
    """Trainer mixin (before the trainer class in the bases): see the module docstring.

    The trainer calls :meth:`_init_stop_agreement` in ``__init__`` and, in the traced step,
    reduces its gradients with :meth:`_all_reduce_gradients`, which appends
    :meth:`stop_request_tensor` to them and passes its reduced value to
    :meth:`_record_stop_agreed`. ``_num_processes()`` is the hook that says how many
    processes train together.
    """

    def _init_stop_agreement(self) -> None:
        with tf.device("CPU:0"):  # this process's request, and the reduced requests of all
            self._stop_request = tf.Variable(0.0, trainable=False, name="stop_request")
            self._stop_agreed = tf.Variable(0.0, trainable=False, name="stop_agreed")
        self._signal_name: str | None = None

    def _num_processes(self) -> int:
        raise NotImplementedError(f"{type(self).__name__} must implement _num_processes()")

    def stop_request_tensor(self, dtype: Any) -> tf.Tensor:
        """This process's stop request, shape [1]: append it to the all-reduce of the gradients."""
        return tf.cast(tf.reshape(self._stop_request, [1]), dtype)

    def _record_stop_agreed(self, reduced: tf.Tensor) -> None:
        """Keep the all-reduced requests (> 0 when any process made one) for after the step."""
        self._stop_agreed.assign(tf.cast(tf.reshape(reduced, []), tf.float32))

    def _all_reduce_gradients(self, grads_and_vars: list,
                              reduce: Callable[[list[tf.Tensor]], Any]) -> list:
        """``grads_and_vars`` with its gradients all-reduced across the processes, in the traced step.

        ``reduce`` is the trainer's collective: it takes a list of tensors and returns the list
        of their reductions (one grouped call). The gradients go to it as dense tensors (sparse
        ones, ``tf.IndexedSlices``, e.g. of an embedding, are densified), followed by this
        process's :meth:`stop_request_tensor`, whose reduction :meth:`_record_stop_agreed`
        keeps. None gradients stay None.
        """
        present = [k for k, (g, _) in enumerate(grads_and_vars) if g is not None]
        grads = [tf.convert_to_tensor(grads_and_vars[k][0]) for k in present]
        *reduced, stop = reduce([*grads, self.stop_request_tensor(grads[0].dtype if grads else tf.float32)])
        self._record_stop_agreed(stop)
        out = list(grads_and_vars)
        for k, g in zip(present, reduced):
            out[k] = (g, grads_and_vars[k][1])
        return out

    def on_interrupt(self, signal_name: str) -> None:
        if self._num_processes() == 1:
            super().on_interrupt(signal_name)  # type: ignore[misc]
            return
        self._signal_name = signal_name
        self._stop_request.assign(1.0)
        logger.warning("%s received: every process stops after the next step (the request travels with "
                       "its all-reduce); the chief then saves a checkpoint of it %s.", signal_name,
                       second_signal_hint(signal_name))

    def run_step(self) -> None:
        super().run_step()  # type: ignore[misc]
        loop = self.loop  # type: ignore[attr-defined]
        if self._num_processes() > 1 and not loop.stop_requested and self._stop_agreed.numpy() > 0:
            stop_after_this_step(loop, self._signal_name or "SIGTERM",
                                 "received" if self._signal_name else "received by another process")
