"""DistributedTrainerReplicated: synchronous data-parallel training over several worker processes.

One process per worker, each with a replica of every variable, on
TensorFlow's ``tf.distribute.MultiWorkerMirroredStrategy``. The workers come
from a cluster spec (``TF_CONFIG``, a Slurm job step's ``SLURM_*`` variables, or
``cluster=..., task_type=..., task_index=...``; see :mod:`trainstack.distributed.cluster`
and :mod:`trainstack.distributed.environment`). One step:

1. each worker builds its training tower (``strategy.run``) on its *own*
   batch from its *own* InputSource (give each worker its shard of the
   data): the batch size is per worker, the total batch is
   ``batch x num_workers``;
2. inside the replica, the gradients are all-reduced across workers with the
   strategy's collective ops (``ReplicaContext.all_reduce``; ring all-reduce
   on CPUs, NCCL on GPUs), averaged by default;
3. the optimizer applies the reduced gradients, outside the replica (the
   Keras 3 optimizer would otherwise all-reduce them a second time), to each
   worker's copy, so the copies stay identical.

Variables are created in the strategy's scope, so worker 0's initial values
are broadcast to the others. Gradient processors see the reduced gradients.

Chief: task ``chief`` when the cluster has one, else ``worker`` 0
(``trainer.is_chief``). Chief-only callbacks (ModelSaver, ...) run only
there, so checkpoints are written once; monitors that would write into the
logger directory (TFEventWriter, JSONWriter) are dropped on the other
workers unless they were given their own ``logdir``. Saving a
``MirroredVariable`` reads the local copy and runs no collective, so the
chief saves alone; a model with ``ON_READ`` variables (e.g. Keras metrics)
would need every worker to take part in saving (TensorFlow's pattern: the
others write to a temporary directory and delete it), which this trainer
does not do: it raises at setup instead of hanging.

The strategy must be created before TensorFlow runs its first op (it
configures the runtime's collective ops): construct the trainer, or call
:func:`make_strategy`, first thing in the script. A worker that dies makes
the others fail within ``timeout_seconds`` (the collectives' timeout and
the strategy's peer health checks) instead of hanging.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import tensorflow as tf

from trainstack.callbacks import tf_private
from trainstack.loop import Callback, MonitorBase
from trainstack.loop.checks import check_bool
from trainstack.towers import SingleCostTrainer, StepOptions
from trainstack.towers.tower.gradproc import check_optimizer
from trainstack.towers.tower.variable_creation import create_variables_outside_function
from trainstack.towers.trainers.tower_result import TowerResult

from ._writers import monitors_of_process
from .cluster import ClusterSpec
from .evaluator import refuse_evaluator
from .interrupt import AgreedInterrupt

__all__ = ["DistributedTrainerReplicated", "BroadcastFromChief", "make_strategy"]

logger = logging.getLogger("trainstack.distributed")

_STRATEGIES: dict[str, tf.distribute.Strategy] = {}


def make_strategy(cluster: ClusterSpec, *, timeout_seconds: float | None = 60.0,
                  implementation: str | None = None) -> tf.distribute.MultiWorkerMirroredStrategy:
    """The process's ``MultiWorkerMirroredStrategy`` for ``cluster`` (made once per process).

    ``implementation``: ``'ring'`` (gRPC ring all-reduce), ``'nccl'`` or None (NCCL when
    the process sees a GPU, else ring). ``timeout_seconds``: the collectives' timeout, so a dead
    peer gives an error instead of a hang (None: wait forever). Call before any TF op runs.
    """
    refuse_evaluator(cluster, "DistributedTrainerReplicated (MultiWorkerMirroredStrategy)")
    if cluster.task_type not in ("chief", "worker"):
        raise ValueError(f"MultiWorkerMirroredStrategy runs on chief/worker tasks, not on "
                         f"{cluster.task_name!r}; run ps tasks with run_server()")
    key = cluster.to_tf_config()
    if key in _STRATEGIES:
        return _STRATEGIES[key]
    if _STRATEGIES:
        raise RuntimeError("this process already made a MultiWorkerMirroredStrategy for another cluster "
                           "spec; a process takes part in one multi-worker run")
    Impl = tf.distribute.experimental.CommunicationImplementation  # noqa: N806
    if implementation is None:
        impl = Impl.NCCL if tf.config.list_physical_devices("GPU") else Impl.RING
    else:
        choices = {"ring": Impl.RING, "nccl": Impl.NCCL, "auto": Impl.AUTO}
        if implementation not in choices:
            raise ValueError(f"implementation must be one of {sorted(choices)} or None, "
                             f"got {implementation!r}")
        impl = choices[implementation]
    if timeout_seconds is not None and not timeout_seconds > 0:
        raise ValueError(f"timeout_seconds must be > 0 or None, got {timeout_seconds!r}")
    options = tf.distribute.experimental.CommunicationOptions(implementation=impl,
                                                              timeout_seconds=timeout_seconds)
    try:
        strategy = tf.distribute.MultiWorkerMirroredStrategy(
            cluster_resolver=cluster.cluster_resolver(), communication_options=options)
    except (RuntimeError, ValueError) as e:
        raise RuntimeError(f"could not create the MultiWorkerMirroredStrategy for {cluster.task_name} "
                           f"({e}). It must be created before TensorFlow runs any op: construct "
                           "the trainer (or call make_strategy) first thing in the script") from e
    _STRATEGIES[key] = strategy
    return strategy


class DistributedTrainerReplicated(AgreedInterrupt, SingleCostTrainer):
    """Synchronous data-parallel training over the workers of a cluster; see the module docstring.

    ``cluster``: a :class:`ClusterSpec`, a cluster dict (then ``task_type`` and
    ``task_index`` name this process), or None for the environment's (``TF_CONFIG``, a Slurm
    job step, else one local worker: :func:`~trainstack.distributed.cluster_from_environment`).
    ``average``: average the workers' gradients (True) or sum them.
    ``timeout_seconds`` and ``implementation``: see :func:`make_strategy`.
    """

    #: copy the chief's non-trainable model variables (e.g. BatchNorm's moving statistics, which
    #: each worker updates from its own batches) to the other workers before training and after
    #: each epoch, so that they agree and the chief's checkpoint holds what every worker uses
    BROADCAST_EVERY_EPOCH: bool = True

    def __init__(self, cluster: ClusterSpec | Mapping[str, Any] | None = None,
                 task_type: str | None = None, task_index: int | None = None, *,
                 average: bool = True, timeout_seconds: float | None = 60.0,
                 implementation: str | None = None, options: StepOptions | None = None,
                 **step_options: Any) -> None:
        average = check_bool(type(self).__name__, "average", average)
        self.cluster_spec = ClusterSpec.resolve(cluster, task_type, task_index)
        self.average = average
        self.strategy = make_strategy(self.cluster_spec, timeout_seconds=timeout_seconds,
                                      implementation=implementation)
        super().__init__(options=options, **step_options)
        self.is_chief = self.cluster_spec.is_chief
        self._init_stop_agreement()  # a SIGTERM stops every worker after the same step (interrupt.py)

    def _num_processes(self) -> int:
        return self.num_workers

    def run_step(self) -> None:
        """One step; when its collective fails because another worker died or cannot be reached,
        TensorFlow's error gets a note naming this worker, the step and the collective."""
        try:
            super().run_step()
        except tf.errors.OpError as e:
            if self.num_workers > 1 and _peer_lost(e):
                e.add_note(f"DistributedTrainerReplicated {self.cluster_spec.task_name}: "
                           f"{self.step_waits_in()} failed in the step after global step {self.global_step}: "
                           "another worker died, stopped or cannot be reached (its log says which). This "
                           "worker stops too.")
            raise

    def step_waits_in(self) -> str | None:
        """The collective a step waits in for the other workers (named by StepWatchdog's report)."""
        if self.num_workers == 1:
            return None
        return (f"the allreduce in the step's gradient aggregation across its {self.num_workers} workers "
                "(MultiWorkerMirroredStrategy's collective ops)")

    @property
    def num_workers(self) -> int:
        """The processes training together; the total batch is the per-worker batch times this."""
        return self.strategy.num_replicas_in_sync

    # -- setup ------------------------------------------------------------------------------------
    def setup_graph(self, input_signature: Sequence[tf.TensorSpec], input: Any,
                    get_cost_fn: Callable[..., Any], get_opt_fn: Callable[[], Any] | None) -> None:
        if len(self.strategy.extended.worker_devices) != 1:
            raise ValueError(f"DistributedTrainerReplicated runs one replica per worker process; this "
                             f"worker sees {list(self.strategy.extended.worker_devices)}. Start one "
                             "process per GPU (CUDA_VISIBLE_DEVICES)")
        if get_opt_fn is not None:
            user_opt_fn = get_opt_fn

            def get_opt_fn() -> Any:
                with self.strategy.scope():
                    opt = self._adapt_optimizer(user_opt_fn())  # made in the strategy's scope
                    check_optimizer(opt, "get_opt_fn()")
                    return opt
        super().setup_graph(input_signature, input, get_cost_fn, get_opt_fn)

    def _variables_in_step(self) -> bool:
        """False: the strategy mirrors the variables on every worker, so they are made first, in a trace of their own."""
        return False

    def _build_variables(self) -> None:
        with self.strategy.scope(), tf.variable_creator_scope(
                create_variables_outside_function(type(self).__name__)):
            super()._build_variables()
        # the first tower was traced in cross-replica context, where the model read each
        # variable's local copy: train the mirrored variables themselves
        self._trainable = [_container(v) for v in self._trainable]
        on_read = [v.name for v in self.tower_func.variables
                   if getattr(v, "synchronization", None) == tf.VariableSynchronization.ON_READ]
        if on_read:
            raise ValueError(f"DistributedTrainerReplicated: the model has ON_READ variables {on_read}, "
                             "whose checkpointing needs every worker; use variables that are updated "
                             "alike on all workers (e.g. tf.Variable with the default synchronization)")
        made_in = tf_private.optimizer_strategy(self._optimizer) if self._optimizer is not None else None
        if made_in is not None and made_in is not self.strategy:
            raise ValueError("DistributedTrainerReplicated: the optimizer was created outside the "
                             "trainer's strategy (e.g. a cached ModelDesc.get_optimizer()); create it in "
                             "get_opt_fn / ModelDesc.optimizer()")
        if self._trains and not self._optimizer.built:
            with self.strategy.scope():  # the optimizer's slots: mirrored like their variables
                self._optimizer.build(self._trainable)
        trained = {id(v) for v in self._trainable}
        others = [_container(v) for v in self.tower_func.variables if id(_container(v)) not in trained]
        if self.BROADCAST_EVERY_EPOCH and others and self.num_workers > 1:
            self.register_callback(BroadcastFromChief(self.strategy, others))

    # -- one step ---------------------------------------------------------------------------------
    def _build_towers(self, tower_inputs: list[list[tf.Tensor]],
                      record_summaries: bool = True) -> list[TowerResult]:
        results: list[TowerResult] = []

        def replica_step() -> None:
            result = self._build_tower(0, tower_inputs[0], record_summaries)
            if self._trains:
                result = result._replace(grads_and_vars=self._all_reduce(result.grads_and_vars))
            results.append(result)

        self.strategy.run(replica_step)
        return results

    def _all_reduce(self, grads_and_vars: list) -> list:
        """The gradients all-reduced across the workers (None gradients kept as None), in a replica."""
        op = tf.distribute.ReduceOp.MEAN if self.average else tf.distribute.ReduceOp.SUM
        context = tf.distribute.get_replica_context()
        return self._all_reduce_gradients(grads_and_vars, lambda tensors: context.all_reduce(op, tensors))

    # -- callbacks ----------------------------------------------------------------------------------
    def setup_callbacks(self, callbacks: Sequence[Callback], monitors: Sequence[MonitorBase]) -> None:
        """On non-chief workers, drop the monitors that would write into the logger directory
        (a writer given its own ``logdir`` stays): see ``_writers.monitors_of_process``."""
        super().setup_callbacks(callbacks, monitors_of_process(
            monitors, is_chief=self.is_chief,
            process=f"DistributedTrainerReplicated worker {self.cluster_spec.task_name}"))


def _peer_lost(error: tf.errors.OpError) -> bool:
    """Whether a step's error is the collective's report of a worker lost (reset connection,
    timeout, cancelled or aborted collective)."""
    return (isinstance(error, (tf.errors.UnavailableError, tf.errors.DeadlineExceededError,
                               tf.errors.CancelledError, tf.errors.AbortedError))
            or "Collective ops is aborted" in str(error))


class BroadcastFromChief(Callback):
    """Copy the chief's value of each of ``variables`` (mirrored variables of ``strategy``) to
    every worker, before training and at each trigger (after every epoch by default).

    It runs a collective, so it runs on every worker at the same point of the loop.
    """

    _chief_only = False

    def __init__(self, strategy: tf.distribute.Strategy, variables: Sequence[tf.Variable]) -> None:
        self.strategy = strategy
        self.variables = list(variables)
        self._sync = tf.function(self._broadcast, autograph=False)

    def _broadcast(self) -> None:
        def replica() -> None:
            ctx = tf.distribute.get_replica_context()
            first = tf.equal(ctx.replica_id_in_sync_group, 0)
            # a broadcast as an all-reduce: every worker but the chief contributes zeros
            values = [tf.where(first, v.read_value(), tf.zeros_like(v.read_value())) for v in self.variables]
            for v, value in zip(self.variables, ctx.all_reduce(tf.distribute.ReduceOp.SUM, values)):
                v.assign(value)

        self.strategy.run(replica)

    def _before_train(self) -> None:
        self._sync()

    def _trigger(self) -> None:
        self._sync()


_container = tf_private.distributed_container  # the distributed variable a per-device copy belongs to
