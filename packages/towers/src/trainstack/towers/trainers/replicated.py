"""SyncMultiGPUTrainerReplicated: a replica of the model on every device, gradients all-reduced.

The step runs under ``tf.distribute.MirroredStrategy`` (``trainer.strategy``): every variable and
optimizer slot is mirrored; tower ``k`` computes its gradients on device ``k`` on its own batch;
they are all-reduced (mean, or sum with ``average=False``) by the cross-device ops ``mode`` names
(tensorpack's names: ``'nccl'``, ``'hierarchical'``, ``'cpu'``, ``'gpu'``, ``'collective'``; None:
``'nccl'`` on GPUs, else ``'cpu'``); gradient processors see the reduced gradients once, and every
copy is updated alike. Statistics the towers update themselves (BatchNormalization's) drift
apart; ``BROADCAST_EVERY_EPOCH`` (default True, as in tensorpack) copies the first device's to the
others before training and after each epoch. Variables are made by the tower function or before
it (not from a tensor computed in the tower), the optimizer by ``get_opt_fn`` in the strategy's
scope.
"""
from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Sequence
from typing import Any

import tensorflow as tf

from trainstack.callbacks import tf_private
from trainstack.loop import Callback
from trainstack.loop.checks import check_bool

from ..session.devices import all_gpus
from ..tower.gradproc import check_optimizer
from ..tower.owner import frozen_variable_ids
from ..tower.variable_creation import create_variables_outside_function
from .multigpu import MultiGPUTrainerBase
from .step_options import StepOptions
from .tower_result import TowerResult

__all__ = ["SyncMultiGPUTrainerReplicated", "SyncReplicas"]

logger = logging.getLogger("trainstack.towers")

MODES = ("nccl", "hierarchical", "cpu", "gpu", "collective")


class SyncMultiGPUTrainerReplicated(MultiGPUTrainerBase):
    """Data-parallel training with a replica of the variables on each device; see the module
    docstring.

    ``gpus``: a count, device indices or device names; ``average``: average the
    towers' gradients (True) or sum them; ``mode``: the all-reduce (above).
    The older form ``(config, gpu_prefetch=True)`` is ``trainstack.tensorpack``'s.
    """

    #: copy the first device's non-trainable variables to the other devices before training
    #: and after each epoch (they drift apart when each tower updates them, e.g. BatchNorm's)
    BROADCAST_EVERY_EPOCH: bool = True

    def __init__(self, gpus: Any, average: bool = True, mode: str | None = None, *,
                 options: StepOptions | None = None, **step_options: Any) -> None:
        average = check_bool(type(self).__name__, "average", average)
        if mode is not None and (not isinstance(mode, str) or mode.lower() not in MODES):
            raise ValueError(f"SyncMultiGPUTrainerReplicated(mode=...) must be one of {list(MODES)} or "
                             f"None, got {mode!r}")
        self.average = average
        self.mode = None if mode is None else mode.lower()
        self._strategy: tf.distribute.MirroredStrategy | None = None
        super().__init__(gpus, options=options, **step_options)
        if self.mode == "nccl" and not all_gpus(self.devices):
            raise ValueError(f"SyncMultiGPUTrainerReplicated(mode='nccl') needs GPUs, got devices "
                             f"{self.devices}; use mode='cpu' (or None) on CPU devices")

    @property
    def strategy(self) -> tf.distribute.MirroredStrategy:
        """The MirroredStrategy holding the model's variables (after setup_graph)."""
        if self._strategy is None:
            raise AttributeError("SyncMultiGPUTrainerReplicated.strategy exists after setup_graph()")
        return self._strategy

    @property
    def reduce_mode(self) -> str:
        """The all-reduce in use: ``mode``, or the default for the devices."""
        if self.mode is not None:
            return self.mode
        return "nccl" if all_gpus(self.devices) and len(self.devices) > 1 else "cpu"

    # -- setup ----------------------------------------------------------------------------------
    def _prepare(self) -> None:
        self._strategy = tf.distribute.MirroredStrategy(self.devices,
                                                        cross_device_ops=self._make_cross_device_ops())
        logger.info("SyncMultiGPUTrainerReplicated: all-reduce mode %r (%s).", self.reduce_mode,
                    tf_private.cross_device_ops_name(self._strategy))

    def _make_cross_device_ops(self) -> tf.distribute.CrossDeviceOps:
        mode = self.reduce_mode
        if mode == "nccl":
            return tf.distribute.NcclAllReduce()
        if mode == "hierarchical":
            return tf.distribute.HierarchicalCopyAllReduce()
        if mode == "cpu":
            return tf.distribute.ReductionToOneDevice(reduce_to_device="/device:CPU:0")
        if mode == "gpu":
            return tf.distribute.ReductionToOneDevice(reduce_to_device=self.devices[0])
        # 'collective': the cross-device ops MultiWorkerMirroredStrategy uses, on our devices; TF
        # exports no public constructor for them
        return tf_private.collective_all_reduce(self.devices)

    def _wrap_opt_fn(self, get_opt_fn: Callable[[], Any] | None) -> Callable[[], Any] | None:
        if get_opt_fn is None:
            return None

        def get_opt_in_scope() -> Any:
            with self.strategy.scope():
                opt = self._adapt_optimizer(get_opt_fn())  # made in the strategy's scope
                check_optimizer(opt, "get_opt_fn()")
                return opt

        return get_opt_in_scope

    def _variable_scope(self) -> Any:
        stack = contextlib.ExitStack()
        stack.enter_context(self.strategy.scope())
        stack.enter_context(tf.variable_creator_scope(
            create_variables_outside_function(type(self).__name__)))
        return stack

    def _slot_scope(self) -> Any:
        return self.strategy.scope()

    def _after_variables(self) -> None:
        optimizer_strategy = tf_private.optimizer_strategy(self._optimizer) if self._optimizer is not None else None
        if optimizer_strategy is not None and optimizer_strategy is not self.strategy:
            raise ValueError(
                "SyncMultiGPUTrainerReplicated: the optimizer was created outside the trainer's "
                "MirroredStrategy (e.g. a cached ModelDesc.get_optimizer() called before "
                "setup_graph). Create it in get_opt_fn / ModelDesc.optimizer(): the trainer calls "
                "that in the strategy's scope")
        # the first tower was built in cross-replica context, where the model read the first
        # copy of each variable: train the mirrored variables themselves
        frozen = frozen_variable_ids(self.tower_func.model_owner)
        mirrored = [_container(v) for v in self._trainable]
        self._trainable = [v for v in mirrored if id(v) not in frozen]
        if self._trains and not self._trainable:
            raise ValueError(f"the cost of tower function {self.tower_func!r} depends on no trainable "
                             "variable: there is nothing to train")
        if self.BROADCAST_EVERY_EPOCH and self.num_towers > 1:
            trained = {id(v) for v in self._trainable}
            others = [v for v in self.tower_func.variables
                      if id(_container(v)) not in trained and len(getattr(_container(v), "values", ())) > 1]
            if others:
                self.register_callback(SyncReplicas([_container(v) for v in others]))

    # -- one step --------------------------------------------------------------------------------
    def _build_towers(self, tower_inputs: list[list[tf.Tensor]],
                      record_summaries: bool = True) -> list[TowerResult]:
        results: list[Any] = [None] * len(tower_inputs)

        def build_replica() -> None:
            ctx = tf.distribute.get_replica_context()
            k = int(tf.get_static_value(ctx.replica_id_in_sync_group))
            results[k] = self._build_tower(k, tower_inputs[k], record_summaries)

        self.strategy.run(build_replica)
        return results

    def _apply_towers(self, results: list[TowerResult]) -> Any:
        if not self._trains:
            return results[0].cost
        strategy = self.strategy
        with strategy.scope():
            indices = [i for i, (g, _) in enumerate(results[0].grads_and_vars) if g is not None]
            variables = [results[0].grads_and_vars[i][1] for i in indices]
            per_replica = [strategy.experimental_distribute_values_from_function(
                lambda ctx, i=i: results[ctx.replica_id_in_sync_group].grads_and_vars[i][0])
                for i in indices]
            op = tf.distribute.ReduceOp.MEAN if self.average else tf.distribute.ReduceOp.SUM
            reduced = strategy.extended.batch_reduce_to(op, list(zip(per_replica, variables)))
        if self._grad_processors:
            # processors compute on plain tensors: the first device's copy of the reduced gradients
            reduced = [strategy.experimental_local_results(g)[0] for g in reduced]
        # outside the strategy's scope: the Keras optimizer then updates each copy of a variable
        # with its device's reduced gradient (through the strategy it was created under) instead
        # of all-reducing the gradients again as it does in a replica context
        self._apply_gradients(list(zip(reduced, variables)))
        return results[0].cost


_container = tf_private.distributed_container  # the MirroredVariable a per-device copy belongs to


class SyncReplicas(Callback):
    """Copy the first device's copy of each of ``variables`` (MirroredVariables) to the other
    devices, before training and at each trigger (after every epoch by default)."""

    def __init__(self, variables: Sequence[tf.Variable]) -> None:
        self.variables = list(variables)
        self.chief_only = False  # every process keeps its own replicas in sync
        self._sync = tf.function(self._copy_first, autograph=False)

    def _copy_first(self) -> None:
        for v in self.variables:
            copies = v.values
            for copy in copies[1:]:
                copy.assign(copies[0].read_value(), read_value=False)

    def _before_train(self) -> None:
        self._sync()

    def _trigger(self) -> None:
        self._sync()
