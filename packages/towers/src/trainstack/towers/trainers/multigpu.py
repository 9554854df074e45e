"""MultiGPUTrainerBase: the data-parallel trainers' common part.

``launch_train_with_config(config, SyncMultiGPUTrainerReplicated(4))`` instead of
``SimpleTrainer()`` is the whole switch. Each of the ``K = len(trainer.devices)`` towers is built
on its device and takes its own batch, so a step trains on ``K`` batches and the default epoch is
``K`` passes over the data (tensorpack's rule; a warning says so). ``tower0`` is the main
training tower. The subclasses differ in where the variables live and how the gradients reach
them (replicated.py, parameter_server.py, async_.py); ``gpus`` may name logical CPU devices, so
the same code runs without GPUs. Checkpoints hold one value per variable whatever the trainer.
The guide: ``docs/tutorials/trainers.md``.
"""
from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Sequence
from typing import Any

import tensorflow as tf

from ..session.devices import check_devices, resolve_devices
from .construction import is_train_config, refuse_config
from .single_cost import SingleCostTrainer
from .step_options import StepOptions

__all__ = ["MultiGPUTrainerBase"]

logger = logging.getLogger("trainstack.towers")


class MultiGPUTrainerBase(SingleCostTrainer):
    """A single-cost trainer with one training tower per device of ``gpus``.

    ``trainer.devices``: the device names, one per tower. Subclasses decide
    where the variables live (:meth:`_variable_scope`) and how the towers'
    gradients are applied (``_apply_towers``). A TrainConfig instead of ``gpus`` (tensorpack 003's
    form) is refused: ``trainstack.tensorpack``'s trainers keep it.
    """

    def __init__(self, gpus: Any, *, options: StepOptions | None = None, **step_options: Any) -> None:
        name = type(self).__name__
        if type(self) is MultiGPUTrainerBase:
            raise TypeError("MultiGPUTrainerBase is the base class of the multi-GPU trainers; use "
                            "SyncMultiGPUTrainerReplicated, SyncMultiGPUTrainerParameterServer or "
                            "AsyncMultiGPUTrainer")
        if is_train_config(gpus):
            refuse_config(self, gpus)
        #: the device of each training tower (tower ``k`` on ``devices[k]``)
        self.devices: list[str] = resolve_devices(gpus, name)
        super().__init__(options=options, **step_options)
        self._check_xla()

    # -- towers ---------------------------------------------------------------------------------
    @property
    def num_towers(self) -> int:
        return len(self.devices)

    def _tower_device(self, index: int) -> str:
        return self.devices[index]

    # -- setup ----------------------------------------------------------------------------------
    def setup_graph(self, input_signature: Sequence[tf.TensorSpec], input: Any,
                    get_cost_fn: Callable[..., Any], get_opt_fn: Callable[[], Any] | None) -> None:
        self._check_xla()
        check_devices(self.devices, type(self).__name__)
        logger.info("%s: building %d training tower(s) on %s.", type(self).__name__, self.num_towers,
                    ", ".join(self.devices))
        self._prepare()
        super().setup_graph(input_signature, input, get_cost_fn, self._wrap_opt_fn(get_opt_fn))

    def _prepare(self) -> None:
        """Called at the start of setup_graph, once the devices exist."""

    def _wrap_opt_fn(self, get_opt_fn: Callable[[], Any] | None) -> Callable[[], Any] | None:
        """``get_opt_fn`` as setup_graph calls it (a strategy creates the optimizer in its scope)."""
        return get_opt_fn

    def _variables_in_step(self) -> bool:
        """False: the variables are placed (replicated on every device or on the parameter server), so they are made first, in a trace of their own."""
        return False

    def _build_variables(self) -> None:
        # the input's own state (StagingInput's per-device buffers) is created on its first trace:
        # make it now, outside the scope that places the model's variables
        self._trace_inputs()
        with self._variable_scope():
            super()._build_variables()
        self._after_variables()
        if self._trains and not self._optimizer.built:
            with self._slot_scope():
                self._optimizer.build(self._trainable)

    def _trace_inputs(self) -> None:
        """Trace every tower's input tensors once, alone."""

        def inputs(feeds: Any) -> None:
            self._get_tower_inputs(feeds)

        tf.function(inputs, input_signature=[self.input.feed_signature()], autograph=False).get_concrete_function()

    def _after_variables(self) -> None:
        """Called once the model's variables exist, before the optimizer's slots are made."""

    def _variable_scope(self) -> Any:
        """The context the model's variables are created in (default: TensorFlow's placement)."""
        return contextlib.nullcontext()

    def _slot_scope(self) -> Any:
        """The context the optimizer's variables are created in (Keras puts each slot beside its
        variable)."""
        return contextlib.nullcontext()

    def _check_xla(self) -> None:
        if self.xla_compile and self.num_towers > 1:
            raise ValueError(
                f"{type(self).__name__}(xla_compile=True) with {self.num_towers} devices: "
                "tf.function(jit_compile=True) compiles the whole step for a single device, which "
                "would put every tower on one device. Use RuntimeConfig(xla=True).apply() "
                "(XLA auto-clustering inside each device's ops) instead")

