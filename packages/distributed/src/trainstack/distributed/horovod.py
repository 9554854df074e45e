"""HorovodTrainer: data-parallel training with one process per device, gradients all-reduced by Horovod.

Every process runs the same script; ``horovodrun`` starts them::

    horovodrun -np 2 -H localhost:2 --gloo python train.py        # 2 processes on this machine
    horovodrun -np 8 -H host1:4,host2:4 --gloo python train.py    # 2 hosts with 4 GPUs each

Get Horovod with ``python scripts/install_horovod.py`` (no released wheel
builds against current TensorFlow; the script builds and caches one).

One step on each process: its tower runs on its own batch and computes the
gradients, Horovod all-reduces them (mean, or sum with ``average=False``;
optionally fp16-compressed on the wire) inside the traced step, and each
process applies the same reduced gradients, so the replicas stay identical.
Rank 0 is the chief: the variables are broadcast from it after
initialization, and only it restores ``session_init`` (the others receive its
values by the broadcast); chief-only callbacks (ModelSaver, the progress bar,
...) run there only. Monitors run on every rank; those that write files
(JSONWriter, TFEventWriter) write nothing on a rank without a logger
directory, and on a rank whose logger directory is rank 0's (the same script
calling ``set_logger_dir`` everywhere) the trainer drops them, so that only
rank 0 writes ``stats.jsonl`` and events there; a rank with a logger
directory of its own (or a monitor given ``logdir=``) writes there.

Data: each rank reads its own input, so the total batch per step is the
per-rank batch x ``hvd.size()``. Give each rank its own shard
(:func:`~trainstack.distributed.shard_dataflow`) or its own randomness; as
with multi-GPU trainers, scale the learning rate (or shrink
``steps_per_epoch``) for the larger total batch.

A dead rank: Gloo notices a closed connection at once and Horovod shuts down,
so the step of every surviving rank fails with :class:`HorovodShutdownError`
(the process exits non-zero) instead of hanging; a rank that hangs without dying is detected
after ``HOROVOD_GLOO_TIMEOUT_SECONDS`` (``horovodrun --gloo-timeout-seconds``,
default 30). ``stall_shutdown_s`` also shuts Horovod down when some rank has
not submitted a tensor for that long (off by default: a long chief-only
callback, such as a validation, would trip it).

Horovod's Keras helpers assume Keras 2, so this module uses its low-level
ops on ``tf.Variable``s (DESIGN.md section 6).
"""
from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from typing import Any

import tensorflow as tf

from trainstack.callbacks import get_logger_dir, tf_variable
from trainstack.inputs import FeedInput, InputSource
from trainstack.loop import Callback, MonitorBase, TrainLoop
from trainstack.loop.checks import check_bool
from trainstack.towers import SingleCostTrainer, StepOptions

from ._writers import monitors_of_process
from .interrupt import AgreedInterrupt

__all__ = ["HorovodTrainer", "BroadcastVariables", "HorovodShutdownError", "import_horovod"]

logger = logging.getLogger("trainstack.distributed")

# what Horovod's ops say once Horovod has shut down (a rank died, failed or finished early)
_SHUT_DOWN = "Horovod has been shut down"

INSTALL_HINT = "run `python scripts/install_horovod.py` (from the trainstack repository) to build and install it"


def import_horovod() -> Any:
    """``horovod.tensorflow``, or an ImportError saying how to get it."""
    try:
        import horovod.tensorflow as hvd  # noqa: PLC0415 - optional dependency, imported on use
    except ImportError as e:
        raise ImportError(f"HorovodTrainer needs Horovod with TensorFlow support ({e}); {INSTALL_HINT}") from e
    return hvd


class HorovodTrainer(AgreedInterrupt, SingleCostTrainer):
    """Data-parallel training over Horovod processes; see the module docstring.

    ``average``: average the gradients over the processes (True) or sum them;
    ``compression``: None / ``'none'``, ``'fp16'``, or a Horovod compressor
    (``hvd.Compression.fp16``); ``broadcast_every_epoch``: broadcast rank 0's
    variables again after each epoch (they stay equal anyway, except
    variables each rank updates from its own batch, such as BatchNorm's
    moving statistics); ``stall_shutdown_s``: shut Horovod down when a rank
    has stalled this long (sets ``HOROVOD_STALL_SHUTDOWN_TIME_SECONDS``).
    """

    #: broadcast the variables from rank 0 after every epoch (tensorpack's attribute name)
    BROADCAST_EVERY_EPOCH: bool = False

    def __init__(self, average: bool = True, compression: Any = None, broadcast_every_epoch: bool | None = None,
                 *, stall_shutdown_s: float | None = None, options: StepOptions | None = None,
                 **step_options: Any) -> None:
        average = check_bool(type(self).__name__, "average", average)
        broadcast_every_epoch = check_bool(type(self).__name__, "broadcast_every_epoch", broadcast_every_epoch,
                                           none_ok=True)
        if stall_shutdown_s is not None:
            if not stall_shutdown_s > 0:
                raise ValueError(f"HorovodTrainer(stall_shutdown_s=...) must be positive, got {stall_shutdown_s!r}")
            os.environ["HOROVOD_STALL_SHUTDOWN_TIME_SECONDS"] = str(int(stall_shutdown_s))
        hvd = import_horovod()
        if stall_shutdown_s is not None and hvd.is_initialized():
            logger.warning("HorovodTrainer(stall_shutdown_s=...) has no effect: Horovod was initialized before "
                           "the trainer (hvd.init()), and reads HOROVOD_STALL_SHUTDOWN_TIME_SECONDS only then.")
        self.hvd = hvd
        self.compression = _compressor(hvd, compression)
        self.average = average
        if broadcast_every_epoch is not None:
            self.BROADCAST_EVERY_EPOCH = broadcast_every_epoch
        hvd.init()
        _pin_gpu(hvd.local_rank())
        super().__init__(options=options, **step_options)
        self._init_stop_agreement()  # a SIGTERM stops every rank after the same step (interrupt.py)
        logger.info("HorovodTrainer: rank %d of %d (local rank %d).", self.rank, self.size, self.local_rank)

    # -- the process's place ----------------------------------------------------------------------
    rank = property(lambda self: self.hvd.rank(), doc="This process's rank (0 is the chief).")
    size = property(lambda self: self.hvd.size(), doc="The number of processes.")
    local_rank = property(lambda self: self.hvd.local_rank(), doc="This process's rank on its host.")
    is_chief = property(lambda self: self.hvd.rank() == 0, doc="Whether this process is rank 0.")

    # -- setup ------------------------------------------------------------------------------------
    def setup_graph(self, input_signature: Sequence[tf.TensorSpec], input: Any, get_cost_fn: Any,
                    get_opt_fn: Any) -> None:
        super().setup_graph(input_signature, input, get_cost_fn, get_opt_fn)
        self.register_callback(BroadcastVariables(every_epoch=self.BROADCAST_EVERY_EPOCH))

    def setup_callbacks(self, callbacks: Sequence[Callback], monitors: Sequence[MonitorBase]) -> None:
        """On non-chief ranks, drop the monitors that would write into the chief's logger directory."""
        super().setup_callbacks(callbacks, self._monitors_of_this_rank(monitors))

    def _monitors_of_this_rank(self, monitors: Sequence[MonitorBase]) -> Sequence[MonitorBase]:
        """``monitors`` without the logger-directory writers when this rank shares rank 0's
        directory and is not rank 0 (a collective: every rank calls it)."""
        chief_dir = self.hvd.broadcast_object(_logger_dir(), root_rank=0, name="trainstack_logger_dir")
        return monitors_of_process(monitors, is_chief=self.is_chief, process=f"HorovodTrainer rank {self.rank}",
                                   own_logger_dir=chief_dir is None or _logger_dir() != chief_dir)

    def _as_input_source(self, input: Any) -> InputSource:
        """An InputSource as it is; a dataflow (this rank's shard) fed by ``FeedInput``, as SimpleTrainer does."""
        return input if isinstance(input, InputSource) else FeedInput(input)

    # -- one step ---------------------------------------------------------------------------------
    def run_step(self) -> None:
        """One step; when its all-reduce fails because Horovod shut down, a
        :class:`HorovodShutdownError` naming this rank and step (TensorFlow's error as its cause)."""
        try:
            super().run_step()
        except tf.errors.OpError as e:
            if _SHUT_DOWN not in str(e):
                raise
            raise HorovodShutdownError(
                f"HorovodTrainer rank {self.rank} of {self.size}: Horovod shut down during the step after "
                f"global step {self.global_step}, which waits in {self.step_waits_in()}: another rank failed, "
                "died, stopped answering for the Gloo timeout or finished early (its log says which). This "
                "rank stops too.") from e

    def _num_processes(self) -> int:
        return self.size

    def step_waits_in(self) -> str | None:
        """The collective a step waits in for the other ranks (named by StepWatchdog's report)."""
        if self.size == 1:
            return None
        return (f"Horovod's allreduce in the step's gradient aggregation across its {self.size} ranks (and, "
                "with BatchNorm(sync_statistics='horovod'), the allreduce of the batch statistics)")

    def _worker_mean(self) -> Any:
        """The training towers' ``cross_worker_mean``: :meth:`mean_over_workers`."""
        return self.mean_over_workers

    def mean_over_workers(self, tensors: Sequence[tf.Tensor]) -> list[tf.Tensor]:
        """Each tensor averaged over the processes (one grouped Horovod all-reduce, named after the
        tensors' ops so that the ranks' calls meet): ``BatchNorm(sync_statistics='horovod')``'s
        ``E[x]`` and ``E[x^2]``. With one process, the tensors as they are."""
        tensors = list(tensors)
        if self.size == 1:
            return tensors
        with tf.name_scope("HorovodCrossWorkerMean"):
            return list(self.hvd.grouped_allreduce(tensors, op=self.hvd.Average))

    def _compute_gradients(self, tape: tf.GradientTape, cost: tf.Tensor) -> list:
        grads_and_vars = super()._compute_gradients(tape, cost)
        return self.allreduce(grads_and_vars)

    def allreduce(self, grads_and_vars: list) -> list:
        """All-reduce the gradients over the processes (in one grouped Horovod call); None stays None.

        Sparse gradients (``tf.IndexedSlices``, e.g. of an embedding) are reduced as dense tensors.
        """
        if self.size == 1 or all(g is None for g, _ in grads_and_vars):
            return grads_and_vars
        op = self.hvd.Average if self.average else self.hvd.Sum

        def reduce(tensors: list[tf.Tensor]) -> list[tf.Tensor]:
            with tf.name_scope("HorovodAllReduce"):
                return self.hvd.grouped_allreduce(tensors, op=op, compression=self.compression)

        # the stop request rides along (see interrupt.py)
        return self._all_reduce_gradients(grads_and_vars, reduce)

    # -- initialization ---------------------------------------------------------------------------
    def _initialize(self, session_init: Any = None, **kwargs: Any) -> None:
        """Restore ``session_init`` on the chief only, then broadcast its variables and loop counters."""
        if self.is_chief:
            super()._initialize(session_init, **kwargs)
        else:
            super()._initialize(None, **kwargs)  # validates the arguments; restores nothing
            if session_init is not None:
                logger.info("HorovodTrainer: rank %d does not restore %r; it receives rank 0's values.",
                            self.rank, session_init)
        self._sync_from_chief()

    def _sync_from_chief(self) -> None:
        """Give every rank rank 0's variables and loop counters (collectives: every rank calls it)."""
        self.broadcast_variables()
        # a resumed chief (restore_loop_state) continues where it stopped: so must the others
        chief_loop = self.hvd.broadcast_object(self.loop.state_dict(), root_rank=0, name="trainstack_loop_state")
        if not self.is_chief and chief_loop != TrainLoop().state_dict():
            self.loop.load_state_dict(chief_loop)

    @property
    def broadcast_targets(self) -> list[tf.Variable]:
        """What the broadcast sets: every variable of the model and of the optimizer."""
        found: dict[int, tf.Variable] = {}
        for v in self.tower_func.checkpoint_module.variables:
            found.setdefault(id(v), v)
        if self.optimizer is not None:
            for v in self.optimizer.variables:
                v = tf_variable(v)
                found.setdefault(id(v), v)
        return list(found.values())

    def broadcast_variables(self) -> None:
        """Set every process's variables to rank 0's; every process must call it."""
        targets = self.broadcast_targets
        logger.info("HorovodTrainer: broadcasting %d variables from rank 0.", len(targets))
        self.hvd.broadcast_variables(targets, root_rank=0)


class HorovodShutdownError(RuntimeError):
    """A collective failed because Horovod shut down: some other rank died, failed or ended."""


class BroadcastVariables(Callback):
    """Broadcast rank 0's variables after each epoch (``every_epoch``) of a HorovodTrainer.

    Runs on every rank (``chief_only`` False): a broadcast needs all of them.
    The broadcast after initialization is the trainer's own (``_initialize``).
    """

    _chief_only = False

    def __init__(self, every_epoch: bool = True) -> None:
        self.every_epoch = check_bool(type(self).__name__, "every_epoch", every_epoch)

    def _setup_graph(self) -> None:
        if not isinstance(self.trainer, HorovodTrainer):
            raise TypeError(f"BroadcastVariables works with a HorovodTrainer, got {type(self.trainer).__name__}")

    def _trigger_epoch(self) -> None:
        if self.every_epoch:
            self.trainer.broadcast_variables()  # type: ignore[attr-defined]  # a HorovodTrainer (_setup_graph)


def _compressor(hvd: Any, compression: Any) -> Any:
    if compression is None or compression == "none":
        return hvd.Compression.none
    if compression == "fp16":
        return hvd.Compression.fp16
    if callable(getattr(compression, "compress", None)) and callable(getattr(compression, "decompress", None)):
        return compression
    raise ValueError(f"HorovodTrainer(compression=...) must be None, 'none', 'fp16' or a Horovod compressor "
                     f"(hvd.Compression.fp16), got {compression!r}")


def _pin_gpu(local_rank: int) -> None:
    """Make GPU ``local_rank`` the only one this process sees (one process per GPU)."""
    gpus = tf.config.list_physical_devices("GPU")
    if not gpus:
        return
    if local_rank >= len(gpus):
        raise RuntimeError(f"Horovod local rank {local_rank} has no GPU of its own: this host has {len(gpus)}; "
                           "start at most one process per GPU (horovodrun -H host:<gpus>)")
    try:
        tf.config.set_visible_devices(gpus[local_rank], "GPU")
        tf.config.experimental.set_memory_growth(gpus[local_rank], True)
    except RuntimeError as e:  # TensorFlow already initialized its devices
        raise RuntimeError("HorovodTrainer must be created before TensorFlow initializes its GPUs "
                           f"(before any op runs), so that it can pin GPU {local_rank}: {e}") from e


def _logger_dir() -> str | None:
    directory = get_logger_dir()
    return None if directory is None else os.path.realpath(directory)
