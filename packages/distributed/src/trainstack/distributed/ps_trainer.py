"""DistributedTrainerParameterServer: asynchronous training with variables on parameter servers.

On TensorFlow's ``tf.distribute.ParameterServerStrategy`` and its
``tf.distribute.coordinator.ClusterCoordinator``. The cluster has a
``chief``, one or more ``worker`` tasks and one or more ``ps`` tasks:

- the ``ps`` tasks hold the variables (the model's and the optimizer's);
- the ``worker`` tasks compute steps: each scheduled step reads the
  variables, builds the training tower on a batch of the worker's own
  dataset (``create_per_worker_dataset``) and applies its gradients on the
  parameter servers, without waiting for the other workers (asynchronous);
- the ``chief`` runs the loop and the callbacks: ``trainer`` exists there
  only. Each ``run_step`` schedules one step on whichever worker is free;
  the coordinator's queue is drained (``join``) at the end of each epoch,
  before the epoch's triggers (ModelSaver...), and whenever a callback
  fetches tensors from a step (the step's values are then waited for).

``ps`` and ``worker`` tasks run :func:`run_server` (a ``tf.distribute.Server``
that serves until killed); :func:`serve_unless_chief` does that for them
and returns on the chief, so one script runs on every task::

    spec = serve_unless_chief()          # never returns on ps/worker tasks
    trainer = DistributedTrainerParameterServer(spec)
    trainer.setup_graph(model.get_input_signature(), dataset_fn, model.build_graph,
                        model.get_optimizer)
    trainer.train_with_defaults(steps_per_epoch=100, max_epoch=5)

The input is ``dataset_fn() -> tf.data.Dataset`` of batches (or a
``tf.data.Dataset``, or a ``TFDatasetInput``), made once on every worker; the workers cannot tell
their shard from it (TensorFlow gives each the same input context), so
shuffle it (each worker then reads in its own order). The batch is per
step; ``steps_per_epoch`` must be given (the workers' datasets repeat).

The seeds' ``DistributedReplicatedTrainer(config, server)`` kept the
variables on parameter servers and applied each worker's gradients there
without averaging them across workers: that is this trainer, and
:func:`DistributedReplicatedTrainer` builds it from that form (one GPU per
worker process here). tensorpack's later ``DistributedTrainerReplicated``
name is the synchronous all-reduce trainer
(:class:`~trainstack.distributed.DistributedTrainerReplicated`), as in TF2
with ``MultiWorkerMirroredStrategy``.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import tensorflow as tf

from trainstack.inputs import TFDatasetInput, normalize_signature
from trainstack.loop import Callback
from trainstack.towers import SingleCostTrainer, StepOptions, TowerContext, launch_train_with_config
from trainstack.towers.tower.gradproc import check_optimizer, unwrap_optimizer
from trainstack.towers.tower.model_desc import tower_func_of
from trainstack.towers.tower.variable_creation import create_variables_outside_function, trace_creating_variables
from trainstack.towers.trainers.step_options import resolve_step_options

from .cluster import ClusterSpec
from .evaluator import refuse_evaluator
from .multiworker import _container

__all__ = ["DistributedTrainerParameterServer", "DistributedReplicatedTrainer", "run_server",
           "serve_unless_chief"]

logger = logging.getLogger("trainstack.distributed")


def run_server(cluster: ClusterSpec) -> None:
    """Serve ``cluster``'s task (a ``ps`` or ``worker``) until the process is killed."""
    if cluster.task_type not in ("ps", "worker"):
        raise ValueError(f"run_server() serves ps and worker tasks; {cluster.task_name} is the "
                         "chief, which runs the trainer")
    logger.info("%s: serving at %s.", cluster.task_name, cluster.task_address)
    server = tf.distribute.Server(tf.train.ClusterSpec(cluster.as_dict()), job_name=cluster.task_type,
                                  task_index=cluster.task_index, protocol="grpc", start=True)
    server.join()


def serve_unless_chief(cluster: ClusterSpec | Mapping[str, Any] | None = None,
                       task_type: str | None = None, task_index: int | None = None) -> ClusterSpec:
    """On a ps/worker task: :func:`run_server` (never returns). On the chief: the spec."""
    spec = ClusterSpec.resolve(cluster, task_type, task_index, local=False)
    refuse_evaluator(spec, "serve_unless_chief()")
    if spec.task_type in ("ps", "worker"):
        run_server(spec)
    return spec


class _ConfigBound:
    """What :func:`DistributedReplicatedTrainer` returns on the chief: ``.train()`` trains
    ``config`` with ``trainer`` through ``launch_train_with_config`` (the core's trainers take no
    TrainConfig themselves)."""

    def __init__(self, config: Any, trainer: DistributedTrainerParameterServer) -> None:
        self.config, self.trainer = config, trainer

    def train(self) -> None:
        launch_train_with_config(self.config, self.trainer)


def DistributedReplicatedTrainer(config: Any, server: Any  # noqa: N802 - the seeds' name
                                 ) -> _ConfigBound:
    """The seeds' form: ``DistributedReplicatedTrainer(config, server).train()``.

    ``server``: on a ps or worker task, its ``tf.distribute.Server`` (``tf.train.Server`` in
    TF1), which then serves forever (as tensorpack's did). The chief runs no server in TF2
    (its coordinator connects to the cluster itself, on the chief's port): pass the chief's
    :class:`ClusterSpec` there (``serve_unless_chief()`` returns it); this returns an object whose
    ``train()`` runs ``launch_train_with_config(config, DistributedTrainerParameterServer(spec))``
    (``config``: a TrainConfig whose ``data`` is a TFDatasetInput and which gives
    ``steps_per_epoch``).
    """
    if isinstance(server, ClusterSpec):
        spec = server
    elif getattr(server, "server_def", None) is not None:
        server_def = server.server_def
        cluster = {job.name: [job.tasks[i] for i in sorted(job.tasks)] for job in server_def.cluster.job}
        spec = ClusterSpec(cluster, server_def.job_name, server_def.task_index)
        if spec.task_type == "chief":
            raise ValueError("DistributedReplicatedTrainer: the chief runs no tf.distribute.Server in "
                             "TF2 (the coordinator takes the chief's port); pass its ClusterSpec instead "
                             "(e.g. serve_unless_chief())")
        logger.info("%s: serving (kill the process to stop it).", spec.task_name)
        server.join()
    else:
        raise TypeError(f"DistributedReplicatedTrainer(config, server) takes a tf.distribute.Server "
                        f"(ps/worker tasks) or the chief's ClusterSpec as server, got {server!r}")
    return _ConfigBound(config, DistributedTrainerParameterServer(spec))


class DistributedTrainerParameterServer(SingleCostTrainer):
    """Asynchronous training on ParameterServerStrategy, run by the chief; see the module docstring.

    ``cluster``: a ClusterSpec (from :func:`serve_unless_chief`), a cluster dict with
    ``task_type``/``task_index``, or None (TF_CONFIG, or a Slurm job step with
    ``TRAINSTACK_SLURM_ROLES``: see ``cluster_from_environment``). The cluster needs ``ps`` and
    ``worker`` tasks; this process must be its ``chief``.
    """

    #: its step is one tower scheduled on a worker by the ClusterCoordinator, without these
    unsupported_options = {
        "steps_per_run": "the coordinator schedules one step per call",
        "xla_compile": "the workers run the step the coordinator schedules, uncompiled",
        "gradient_accumulation_steps": "each scheduled step applies its one batch's gradients",
        "mixed_precision": "the step applies its gradients without loss scaling",
        "skip_nonfinite_steps": "the scheduled step has no non-finite check",
    }

    def __init__(self, cluster: ClusterSpec | Mapping[str, Any] | None = None,
                 task_type: str | None = None, task_index: int | None = None, *,
                 options: StepOptions | None = None, **step_options: Any) -> None:
        # checked before anything connects to the cluster
        options = resolve_step_options(type(self).__name__, options, step_options, self.unsupported_options)
        spec = ClusterSpec.resolve(cluster, task_type, task_index, local=False)
        refuse_evaluator(spec, "DistributedTrainerParameterServer")
        missing = [t for t in ("chief", "worker", "ps") if t not in spec.cluster]
        if missing:
            raise ValueError(f"DistributedTrainerParameterServer needs chief, worker and ps tasks; the "
                             f"cluster lacks {missing}")
        if spec.task_type != "chief":
            raise ValueError(f"DistributedTrainerParameterServer runs on the chief; this process is "
                             f"{spec.task_name}: call run_server() (or serve_unless_chief()) there")
        self.cluster_spec = spec
        self.strategy = tf.distribute.ParameterServerStrategy(spec.cluster_resolver())
        self.coordinator = tf.distribute.coordinator.ClusterCoordinator(self.strategy)
        super().__init__(options=options)
        self.is_chief = True
        self._dataset_fn: Callable[[], tf.data.Dataset] | tf.data.Dataset | None = None
        self._iterator: Any = None

    @property
    def num_workers(self) -> int:
        return len(self.cluster_spec.cluster["worker"])

    def step_waits_in(self) -> str | None:
        """What a step waits in (named by StepWatchdog's report): the workers and parameter servers."""
        return (f"the ClusterCoordinator's wait for the step it scheduled on one of its {self.num_workers} "
                f"workers, whose variable reads and updates go to the {len(self.cluster_spec.cluster['ps'])} "
                "parameter server(s)")

    # -- setup ----------------------------------------------------------------------------------
    def setup_graph(self, input_signature: Sequence[tf.TensorSpec], input: Any,
                    get_cost_fn: Callable[..., Any], get_opt_fn: Callable[[], Any] | None) -> None:
        """Like SingleCostTrainer's, but ``input`` is ``dataset_fn() -> tf.data.Dataset`` (or a
        dataset) yielding batches in ``input_signature`` order, made on every worker."""
        if self.train_op is not None:
            raise RuntimeError("DistributedTrainerParameterServer.setup_graph() was already called")
        if get_opt_fn is None:
            raise TypeError("DistributedTrainerParameterServer.setup_graph() needs get_opt_fn")
        signature = normalize_signature(input_signature)
        if isinstance(input, TFDatasetInput) and input.dataset is not None:
            input = input.dataset
        if not (callable(input) or isinstance(input, tf.data.Dataset)):
            raise TypeError(f"DistributedTrainerParameterServer takes dataset_fn() -> tf.data.Dataset, "
                            f"a tf.data.Dataset or a TFDatasetInput as input, got {input!r}; each "
                            "worker makes its own copy of the dataset")
        self._dataset_fn = input
        self.tower_func = tower_func_of(get_cost_fn, signature, self.tower_func_class)
        with self.strategy.scope(), self._outside_tower():  # the optimizer is made in the scope
            opt = self._adapt_optimizer(get_opt_fn())
            check_optimizer(opt, "get_opt_fn()")
        self._optimizer, self._grad_processors = unwrap_optimizer(opt)
        self._build_variables()
        with self.strategy.scope():
            self._optimizer.build(self._trainable)
        self._iterator = iter(self.coordinator.create_per_worker_dataset(self._dataset_fn))
        step = _ScheduledStep(self)
        self.train_op = step  # type: ignore[assignment]  # a TracedStep's interface, run by the coordinator
        step.trace(())
        self.register_callback(_JoinAtEpochEnd(self.coordinator))

    def _build_variables(self) -> None:
        found: list[tf.Variable] = []
        signature = self.tower_func.input_signature

        def build(*inputs: tf.Tensor) -> tf.Tensor:
            with TowerContext("tower0", is_training=True, index=0):
                with tf.GradientTape() as tape:
                    cost = self.tower_func(*inputs)
            found[:] = tape.watched_variables()
            return cost

        with self.strategy.scope(), tf.variable_creator_scope(
                create_variables_outside_function(type(self).__name__)):
            trace_creating_variables(build, signature, type(self).__name__)
        self._trainable = [_container(v) for v in found if v.trainable]
        if not self._trainable:
            raise ValueError(f"the cost of tower function {self.tower_func!r} depends on no trainable "
                             "variable: there is nothing to train")

    def _default_steps_per_epoch(self) -> int:
        raise ValueError("DistributedTrainerParameterServer needs steps_per_epoch: the workers' "
                         "datasets have no size the chief knows")

    @property
    def input(self) -> Any:
        raise AttributeError("DistributedTrainerParameterServer has no InputSource: each worker reads "
                             "the dataset of dataset_fn")

    # -- one step (on a worker) ---------------------------------------------------------------------
    def _worker_step(self, iterator: Any, fetch_names: tuple[str, ...]) -> Any:
        def replica_step(batch: Any) -> Any:
            inputs = list(batch) if isinstance(batch, (tuple, list)) else [batch]
            result = self._build_tower(0, inputs)
            self._apply_gradients(result.grads_and_vars)
            return result.cost, {name: result.handle.get_tensor(name) for name in fetch_names}

        return self.strategy.run(replica_step, args=(next(iterator),))


class _ScheduledStep:
    """The loop's FetchableStep for the PS trainer: each run schedules one worker step; with
    fetches, it waits for that step and returns its values."""

    def __init__(self, trainer: DistributedTrainerParameterServer) -> None:
        self.trainer = trainer
        self._variants: dict[tuple[str, ...], Any] = {}

    def trace(self, fetches: Sequence[str]) -> Any:
        key = tuple(sorted(set(fetches)))
        fn = self._variants.get(key)
        if fn is None:
            fn = tf.function(lambda iterator: self.trainer._worker_step(iterator, key), autograph=False)  # noqa: SLF001
            self._variants[key] = fn
        return fn

    def run_with_fetches(self, args: tuple, fetches: Sequence[str],
                         feeds: Mapping[str, Any]) -> tuple[Any, Mapping[str, Any]]:
        if args or feeds:
            raise TypeError("the parameter-server step takes no arguments or feeds: its inputs come "
                            "from the workers' datasets")
        remote = self.trainer.coordinator.schedule(self.trace(fetches), args=(self.trainer._iterator,))  # noqa: SLF001
        if not fetches:
            return remote, {}
        cost, values = remote.fetch()
        return cost, values

    def __call__(self) -> Any:
        return self.run_with_fetches((), (), {})[0]


class _JoinAtEpochEnd(Callback):
    """Wait for the scheduled steps at the end of each epoch and of training."""

    _chief_only = False

    def __init__(self, coordinator: Any) -> None:
        self.coordinator = coordinator

    def _after_epoch(self) -> None:
        self.coordinator.join()

    def _after_train(self) -> None:
        self.coordinator.join()
