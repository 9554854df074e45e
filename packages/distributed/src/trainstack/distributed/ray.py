"""train_on_ray: run a TrainConfig on a Ray cluster with Ray Train's ``TensorflowTrainer``.

Ray Train starts ``num_workers`` worker processes (actors) and sets ``TF_CONFIG`` in each
for a ``MultiWorkerMirroredStrategy``; in each worker :func:`train_on_ray` then

1. creates a :class:`~trainstack.distributed.DistributedTrainerReplicated` (the strategy is
   made before TensorFlow runs any op, as it must be);
2. calls ``make_config(worker)`` with a :class:`RayWorker` (rank, world size, the trainer, the
   checkpoint it resumes from) to build that worker's TrainConfig (its shard of the data);
3. when Ray hands it a checkpoint (a restart), resumes from it exactly: weights, optimizer
   slots, loop position, monitors' state and the input's position, as
   ``AutoResumeTrainConfig`` does from a logger directory;
4. trains with ``launch_train_with_config``, with a :class:`RayCheckpointReporter` added to
   the callbacks: at the end of each epoch (and every ``checkpoint_every_k_steps`` steps, and
   at the end of training) the chief writes a trainstack checkpoint (what ModelSaver writes)
   into a local directory and reports it to Ray with ``ray.train.report``; Ray copies it to
   its storage (``storage_path``) and keeps the newest ``num_to_keep``.

When a worker dies (or raises), Ray Train stops the whole worker group and, while its
``FailureConfig(max_failures=...)`` allows, starts a new one: every worker is a new process
that downloads the latest reported checkpoint and continues from its step, so the run ends
with the weights of an uninterrupted run (the steps after that checkpoint are redone).

Ray is an optional dependency (``pip install 'trainstack-distributed[ray]'``), imported only
when :func:`train_on_ray` runs.
"""
from __future__ import annotations

import logging
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

from trainstack.callbacks import ModelSaver, variables_of
from trainstack.loop import Callback
from trainstack.loop.checks import check_bool, check_int
from trainstack.towers import StepOptions

if TYPE_CHECKING:  # pragma: no cover
    from trainstack.towers import TrainConfig

    from .multiworker import DistributedTrainerReplicated

__all__ = ["train_on_ray", "RayWorker", "RayCheckpointReporter", "import_ray", "INSTALL_HINT"]

logger = logging.getLogger("trainstack.distributed")

INSTALL_HINT = "install it with: pip install 'trainstack-distributed[ray]'"
#: the DistributedTrainerReplicated arguments ``trainer_kwargs`` may set (Ray gives the cluster)
TRAINER_KWARGS = ("average", "timeout_seconds", "implementation", "options", *StepOptions.names())
#: the environment variable Ray Train's TensorFlow backend sets to "1" in every worker; trainstack
#: is on Keras 3 (``tf.keras`` must stay Keras 3), so the worker puts back the driver's value
LEGACY_KERAS_VAR = "TF_USE_LEGACY_KERAS"


def import_ray() -> ModuleType:
    """``ray`` with Ray Train's TensorFlow support, or an ImportError saying how to get it."""
    try:
        import ray  # noqa: PLC0415 - optional dependency, imported on use
        import ray.train  # noqa: PLC0415, F401
        import ray.train.tensorflow  # noqa: PLC0415, F401
    except ImportError as e:
        raise ImportError(f"train_on_ray needs Ray Train (ray[train]) ({e}); {INSTALL_HINT}") from e
    return ray


@dataclass(frozen=True)
class RayWorker:
    """What ``make_config`` gets in each Ray worker.

    ``rank`` (0 is the chief) of ``world_size`` workers: give each worker its shard of the data
    (e.g. ``shard_dataflow(df, worker.rank, worker.world_size)``); ``local_rank``: its index on
    its node; ``trainer``: the DistributedTrainerReplicated it trains with; ``resumed_from``: the
    local path of the trainstack checkpoint this worker resumes from (None: a fresh start; set
    after a restart that found a reported checkpoint).
    """

    rank: int
    world_size: int
    local_rank: int
    trainer: DistributedTrainerReplicated
    resumed_from: str | None

    @property
    def is_chief(self) -> bool:
        return self.rank == 0


class RayCheckpointReporter(Callback):
    """Report trainstack checkpoints to Ray Train (added to the callbacks by :func:`train_on_ray`).

    It runs on every worker: ``ray.train.report`` is a barrier, which every worker calls the same
    number of times at the same steps. It reports when ModelSaver would save: after each epoch
    (once the epoch's other callbacks have run, at the next ``before_epoch`` or in
    ``after_train``), every ``every_k_steps`` steps when given, and at the end of training (or
    a stop) if the last step was not reported yet. Then the chief writes a checkpoint with its
    :class:`~trainstack.callbacks.ModelSaver` into ``checkpoint_dir`` (``max_to_keep=1``) and
    reports that directory with its latest scalars as metrics; the other workers make the same
    call without a checkpoint (as does the chief when it could not write: a disk error is logged,
    not raised). Weights that are not finite are neither saved nor reported and stop training on
    every worker alike (ModelSaver's rule). Each worker's ModelSaver also restores the monitors'
    state of the checkpoint a restarted worker resumes from.
    """

    _chief_only = False

    def __init__(self, checkpoint_dir: str, every_k_steps: int | None = None) -> None:
        self.every_k_steps = check_int("RayCheckpointReporter", "every_k_steps", every_k_steps, minimum=1,
                                       none_ok=True, note="None reports at each epoch's end only")
        self.checkpoint_dir = checkpoint_dir
        self.saver = ModelSaver(max_to_keep=1, keep_checkpoint_every_n_hours=None, checkpoint_dir=checkpoint_dir)
        self._pending = False  # an epoch ended: report at the next before_epoch or in after_train
        self._reported_step: int | None = None
        #: how many times this worker called ``ray.train.report``
        self.reports = 0

    def _setup_graph(self) -> None:
        self.saver.setup_graph(self.trainer)

    def _before_train(self) -> None:
        self.saver.before_train()  # a resumed run: the monitors' state of its checkpoint
        self._reported_step = self.global_step if self.trainer.loop.resumed else None

    def _trigger_step(self) -> None:
        k, loop = self.every_k_steps, self.trainer.loop
        if k is None or loop.local_step == loop.steps_per_epoch - 1:
            return  # the epoch's last step: reported once the epoch's callbacks have run
        if self.global_step // k > (self._reported_step or 0) // k:
            self._report()

    def _trigger_epoch(self) -> None:
        self._pending = True

    def _before_epoch(self) -> None:
        if self._pending:
            self._pending = False
            self._report()

    def _after_train(self) -> None:
        loop = self.trainer.loop
        self._pending = False
        if ((loop.epoch_finished or loop.interrupted) and self.global_step > 0
                and self._reported_step != self.global_step):
            self._report()

    def _report(self) -> None:
        import ray.train  # noqa: PLC0415 - only ever runs inside a Ray Train worker

        self._reported_step = self.global_step
        # the same weights on every worker: every worker takes the same way here
        if _holds_non_finite(self.trainer.checkpoint_objects):  # type: ignore[attr-defined]  # a towers trainer's
            if self.trainer.is_chief:
                self.saver.save()  # refuses: logs the variable and the last good checkpoint, stops training
            else:
                self.trainer.stop_on_nonfinite(f"{self.name}: not reporting global_step {self.global_step}: "
                                               "the weights hold NaN or Inf.")
            return
        path = self.saver.save() if self.trainer.is_chief else None  # None on a disk error (logged)
        checkpoint = ray.train.Checkpoint.from_directory(self.checkpoint_dir) if path is not None else None
        ray.train.report(self.metrics(), checkpoint=checkpoint, delete_local_checkpoint_after_upload=False)
        self.reports += 1

    def metrics(self) -> dict[str, Any]:
        """What a report says: the loop's position and the latest value of each scalar."""
        loop = self.trainer.loop
        metrics: dict[str, Any] = {"global_step": self.global_step, "epoch_num": loop.epoch_num,
                                   "local_step": loop.local_step}
        monitors = getattr(self.trainer, "monitors", None)
        if monitors is not None:
            for name in monitors.scalar_names():
                metrics.setdefault(name, monitors.get_latest(name))
        return metrics


def _holds_non_finite(objects: Mapping[str, Any]) -> bool:
    """Whether a floating-point variable of ``objects`` (a trainer's ``checkpoint_objects``)
    holds a NaN or an infinity (checked where the variable lives)."""
    import tensorflow as tf  # noqa: PLC0415

    for obj in objects.values():
        for v in variables_of(obj):
            if tf.as_dtype(v.dtype).is_floating and not bool(tf.reduce_all(tf.math.is_finite(v))):
                return True
    return False


def train_on_ray(make_config: Callable[[RayWorker], TrainConfig], num_workers: int = 2, *,
                 use_gpu: bool = False, resources_per_worker: Mapping[str, float] | None = None,
                 max_failures: int = 0, checkpoint_every_k_steps: int | None = None,
                 num_to_keep: int | None = 2, storage_path: str | os.PathLike | None = None,
                 name: str | None = None, trainer_kwargs: Mapping[str, Any] | None = None) -> Any:
    """Train ``make_config``'s TrainConfig on ``num_workers`` Ray workers; return Ray's ``Result``.

    ``make_config(worker: RayWorker) -> TrainConfig`` runs in each worker, after its trainer is
    made (it may build datasets, models, callbacks; TensorFlow ops are fine there); it is
    pickled by Ray: a function of the driver's script (or a closure, a ``functools.partial``)
    travels by value, one of another module by reference (that module must be importable on
    every node). ``use_gpu``/``resources_per_worker``: Ray's ScalingConfig (one GPU per
    worker with ``use_gpu=True``). ``max_failures``: restarts of the worker group that Ray
    Train makes after a worker fails (-1: no limit; 0, Ray's default: none), each resuming from
    the latest reported checkpoint. ``checkpoint_every_k_steps``: report a checkpoint every k
    steps too (default: at each epoch's end only), which bounds the steps a restart redoes.
    ``num_to_keep``: checkpoints Ray keeps (None: all). ``storage_path``/``name``: where Ray
    stores them (``<storage_path>/<name>/checkpoint_*``; default ``~/ray_results``); on several
    nodes it must be storage every node reaches (NFS, S3, GCS...). ``trainer_kwargs``: passed to
    DistributedTrainerReplicated (``average``, ``timeout_seconds``, ``implementation``,
    ``xla_compile``, ``steps_per_run``).

    Ray is started on this machine with ``ray.init()`` unless it already runs: call
    ``ray.init(address=...)`` first to use a cluster. A run that still fails after
    ``max_failures`` restarts raises Ray's ``TrainingFailedError``.
    """
    if not callable(make_config):
        raise TypeError(f"train_on_ray(make_config=...) must be a function RayWorker -> TrainConfig, "
                        f"got {make_config!r:.80}")
    num_workers = check_int("train_on_ray", "num_workers", num_workers, minimum=1)
    max_failures = check_int("train_on_ray", "max_failures", max_failures, minimum=-1,
                             note="-1 restarts without limit")
    check_int("train_on_ray", "checkpoint_every_k_steps", checkpoint_every_k_steps, minimum=1, none_ok=True,
              note="None reports a checkpoint at each epoch's end only")
    check_int("train_on_ray", "num_to_keep", num_to_keep, minimum=1, none_ok=True,
              note="None keeps every checkpoint")
    check_bool("train_on_ray", "use_gpu", use_gpu)
    kwargs = dict(trainer_kwargs or {})
    unknown = sorted(set(kwargs) - set(TRAINER_KWARGS))
    if unknown:
        raise ValueError(f"train_on_ray(trainer_kwargs=...) got {unknown}; it takes "
                         f"DistributedTrainerReplicated's {list(TRAINER_KWARGS)} (Ray Train gives the "
                         "cluster: TF_CONFIG is set in each worker)")
    if name is not None and (not isinstance(name, str) or not name):
        raise TypeError(f"train_on_ray(name=...) must be a non-empty string or None, got {name!r}")

    ray = import_ray()
    _check_train_v2()
    from ray.train import CheckpointConfig, FailureConfig, RunConfig, ScalingConfig  # noqa: PLC0415
    from ray.train.tensorflow import TensorflowTrainer  # noqa: PLC0415

    trainer = TensorflowTrainer(
        train_loop_per_worker=_train_loop_per_worker,
        train_loop_config={"make_config": make_config, "trainer_kwargs": kwargs,
                           "checkpoint_every_k_steps": checkpoint_every_k_steps,
                           "legacy_keras": os.environ.get(LEGACY_KERAS_VAR)},
        scaling_config=ScalingConfig(num_workers=num_workers, use_gpu=use_gpu,
                                     resources_per_worker=dict(resources_per_worker)
                                     if resources_per_worker is not None else None),
        run_config=RunConfig(
            name=name, storage_path=os.fspath(storage_path) if storage_path is not None else None,
            failure_config=FailureConfig(max_failures=max_failures),
            checkpoint_config=CheckpointConfig(num_to_keep=num_to_keep)))
    logger.info("train_on_ray: %d workers on Ray %s (max_failures=%d).", num_workers, ray.__version__,
                max_failures)
    return trainer.fit()


def _check_train_v2() -> None:
    """train_on_ray uses Ray Train's V2 API (Ray's default since 2.51): refuse the older one."""
    try:
        from ray.train.v2._internal.constants import V2_ENABLED_ENV_VAR, is_v2_enabled  # noqa: PLC0415
    except ImportError:  # a Ray whose layout changed: let Ray Train itself decide
        return
    if not is_v2_enabled():
        raise RuntimeError(f"train_on_ray needs Ray Train's V2 API, but {V2_ENABLED_ENV_VAR}="
                           f"{os.environ.get(V2_ENABLED_ENV_VAR)!r} selects the older one; unset it")


# -- in each Ray worker ----------------------------------------------------------------------------
def _train_loop_per_worker(loop_config: dict[str, Any]) -> None:
    """Ray Train's per-worker function: see the module docstring."""
    # Ray's TensorFlow backend sets TF_USE_LEGACY_KERAS=1 (tf.keras -> tf_keras); trainstack needs
    # the driver's setting (Keras 3), before anything reads tf.keras
    if loop_config["legacy_keras"] is None:
        os.environ.pop(LEGACY_KERAS_VAR, None)
    else:
        os.environ[LEGACY_KERAS_VAR] = loop_config["legacy_keras"]
    from .multiworker import DistributedTrainerReplicated  # noqa: PLC0415

    # first: the strategy must exist before TensorFlow runs any op (TF_CONFIG comes from Ray)
    trainer = DistributedTrainerReplicated(**loop_config["trainer_kwargs"])

    import ray.train  # noqa: PLC0415

    from trainstack.towers import TrainConfig, launch_train_with_config  # noqa: PLC0415

    context = ray.train.get_context()
    rank, world_size = context.get_world_rank(), context.get_world_size()
    if trainer.num_workers != world_size or trainer.cluster_spec.task_index != rank:
        raise RuntimeError(f"train_on_ray: TF_CONFIG names task {trainer.cluster_spec.task_name} of "
                           f"{trainer.num_workers} workers, but Ray Train says rank {rank} of {world_size}")
    # one directory per run and rank, the same after a restart: a worker that Ray killed left its
    # copy there, which is replaced now, so killed workers leave no more than one behind
    run_id = re.sub(r"[^A-Za-z0-9_.-]", "_", f"{ray.get_runtime_context().get_job_id()}-"
                                            f"{context.get_experiment_name()}")
    directory = os.path.join(tempfile.gettempdir(), "trainstack-ray", run_id, f"rank{rank}")
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(directory)
    try:
        resumed_from = _restore(ray.train.get_checkpoint(), directory)
        worker = RayWorker(rank=rank, world_size=world_size, local_rank=context.get_local_rank(),
                           trainer=trainer, resumed_from=resumed_from)
        config = loop_config["make_config"](worker)
        if not isinstance(config, TrainConfig):
            raise TypeError(f"train_on_ray: make_config(worker) must return a TrainConfig, got "
                            f"{config!r:.80} ({type(config).__name__})")
        if resumed_from is not None:
            _resume(config, resumed_from)
        reporter = RayCheckpointReporter(directory, loop_config["checkpoint_every_k_steps"])
        config.callbacks = [*config.callbacks, reporter]
        launch_train_with_config(config, trainer)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
        try:
            os.rmdir(os.path.dirname(directory))  # the run's folder, once its last rank is done
        except OSError:
            pass


def _restore(checkpoint: Any, directory: str) -> str | None:
    """Copy Ray's ``checkpoint`` (None: a fresh start) into ``directory``; return the trainstack
    checkpoint in it (None for a fresh start)."""
    if checkpoint is None:
        return None
    from trainstack.towers import AutoResumeTrainConfig  # noqa: PLC0415

    checkpoint.to_directory(directory)
    path = AutoResumeTrainConfig.find_checkpoint(directory)
    if path is None:
        raise RuntimeError(f"train_on_ray: Ray's checkpoint {checkpoint.path} holds no readable trainstack "
                           f"checkpoint (expected a 'checkpoint' state file and model-<step> files, as "
                           f"RayCheckpointReporter writes); found {sorted(os.listdir(directory))}")
    return path


def _resume(config: TrainConfig, path: str) -> None:
    """Make ``config`` continue from checkpoint ``path``: its weights and loop position replace
    the config's ``session_init`` and ``starting_epoch`` (as ``AutoResumeTrainConfig`` does)."""
    from trainstack.towers import ChainInit, CheckpointInit, LoopStateInit  # noqa: PLC0415

    if config.session_init is not None:
        logger.info("train_on_ray: session_init %r is replaced by Ray's checkpoint %s.",
                    config.session_init, path)
    loop_init = LoopStateInit(path)
    config.session_init = ChainInit([CheckpointInit(path, resume=True), loop_init])
    config.starting_epoch = loop_init.starting_epoch
    logger.info("train_on_ray: resuming from Ray's checkpoint %s at epoch %d, global_step %d.", path,
                loop_init.starting_epoch, loop_init.state["global_step"])
