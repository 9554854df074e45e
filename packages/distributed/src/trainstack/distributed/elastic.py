"""ElasticHorovodTrainer: HorovodTrainer for jobs whose workers come and go (elastic Horovod).

One line changes in a HorovodTrainer script (``ElasticHorovodTrainer()`` for
``HorovodTrainer()``), and the job is started by horovodrun's elastic driver::

    horovodrun -np 2 --min-np 1 --max-np 4 --host-discovery-script ./discover_hosts.sh python train.py

The training runs under Horovod's elastic API: the epochs and steps are the
function given to Horovod's ``run_fn`` (what ``hvd.elastic.run`` wraps, see
:meth:`ElasticHorovodTrainer._run_epochs`), the training state
(``trainer.state``) is an ``hvd.elastic.ObjectState``, committed every
``commit_every`` steps and at each epoch's end. A failed collective (a worker
died) rolls every survivor back to the last commit; a membership change the
driver announces (a host added or removed by the discovery script) interrupts
the next commit. Either way Horovod re-initializes with the new world, rank 0
broadcasts the state to everyone (a new worker receives it there), and
training goes on from the committed step, with the input re-sharded for the new
size (elastic_input.py), the chief-only callbacks on the new rank 0
(elastic_callbacks.py) and the callbacks' ``on_world_size_change`` hook called.

The state that survives: every variable of the trainer's checkpoint objects
(model, optimizers with their learning rate and iteration counter, random
generators), the loop's counters (epoch, global step, step in the epoch), the
state of the stateful callbacks that exact resume saves (schedules, monitors'
history, EarlyStopping...) and the monitors' latest scalars, as rank 0 has them,
and the input's position. Datapoints: the steps the final model went through
consumed the stream of the dataflow's passes exactly once, in order; a step
rolled back after a failure had read its datapoints before (at least once in
reads, at most ``commit_every`` steps x the old world size of them again).

Horovod's own ``hvd.elastic.run`` is not used as is: on TensorFlow 2.21 its
wrapper turns only ``UnknownError``\\ s naming a Horovod op into
``HorovodInternalError`` and silently returns None for any other
``UnknownError``; its TensorFlowState does not broadcast variables in eager
mode, and its TensorFlowKerasState calls Keras 2's ``optimizer.variables()``.
The trainer translates the errors itself and calls the same ``run_fn`` with the
same reset (``hvd.shutdown(); hvd.init()``), with an ObjectState of its own.
"""
from __future__ import annotations

import contextlib
import functools
import logging
import os
import time
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from trainstack.callbacks import tf_variable, variables_of
from trainstack.callbacks.callback_state import stateful_callbacks
from trainstack.inputs import InputSource
from trainstack.loop import Callback, MonitorBase
from trainstack.loop.checks import check_int
from trainstack.towers import StepOptions
from trainstack.towers.tower.step import TracedStep

from ._writers import monitors_of_process
from .elastic_callbacks import ChiefGate, ChiefGatedMonitor, notify_world_size_change
from .elastic_input import ElasticFeedInput
from .horovod import HorovodShutdownError, HorovodTrainer
from .sharding import ShardedDataFlow

__all__ = ["ElasticHorovodTrainer", "DEFAULT_COMMIT_EVERY"]

logger = logging.getLogger("trainstack.distributed")

#: steps between two commits when ``commit_every`` is not given: a failure redoes at most
#: this many steps; a commit copies every variable to host memory and makes two small
#: broadcasts (benchmarks/README.md measures it)
DEFAULT_COMMIT_EVERY = 50

# what a failed collective says once a peer died (Gloo's transport error, in flight) or Horovod
# shut down (every collective after that); other Horovod errors (mismatched shapes...) are bugs
# that a rollback would only repeat, and end the run
_HOROVOD_FAILURE_MARKS = ("Horovod has been shut down", "gloo", "Gloo")


def _horovod_elastic() -> tuple[Any, Any, type, Any]:
    """Horovod's elastic pieces: ``run_fn``, ``ObjectState``, ``HorovodInternalError``, the reset."""
    from horovod.common.elastic import ObjectState, run_fn  # noqa: PLC0415 - optional dependency
    from horovod.common.exceptions import HorovodInternalError  # noqa: PLC0415
    from horovod.tensorflow.elastic import _reset  # noqa: PLC0415
    return run_fn, ObjectState, HorovodInternalError, _reset


class ElasticHorovodTrainer(HorovodTrainer):
    """A :class:`HorovodTrainer` whose job may grow, shrink and lose workers; see the module docstring.

    ``commit_every`` (default :data:`DEFAULT_COMMIT_EVERY`): steps between commits of the
    training state (also committed at each epoch's end); the other arguments are
    HorovodTrainer's. ``setup_graph`` takes the *whole* dataflow (a ``shard_dataflow(df,
    rank, size)`` is unwrapped: the trainer re-shards it at every membership change).
    """

    def __init__(self, average: bool = True, compression: Any = None, broadcast_every_epoch: bool | None = None,
                 *, commit_every: int = DEFAULT_COMMIT_EVERY, stall_shutdown_s: float | None = None,
                 options: StepOptions | None = None, **step_options: Any) -> None:
        self.commit_every = check_int("ElasticHorovodTrainer", "commit_every", commit_every, minimum=1)
        super().__init__(average, compression, broadcast_every_epoch, stall_shutdown_s=stall_shutdown_s,
                         options=options, **step_options)
        _horovod_elastic()  # fail here, not mid-run, when Horovod lacks its elastic module
        #: whether horovodrun's elastic driver started this process (else: a fixed world)
        self.under_elastic_driver = bool(os.environ.get("HOROVOD_GLOO_RENDEZVOUS_ADDR")) and \
            os.environ.get("HOROVOD_ELASTIC") == "1"
        #: what happened to the job, as this process saw it: dicts with ``kind`` ("rollback",
        #: "resize", "commit"), ``time``, ``global_step`` and details (read by tests and benchmarks)
        self.elastic_events: list[dict[str, Any]] = []
        self._placement = (self.hvd.rank(), self.hvd.size())
        self._traced_size = self._placement[1]
        #: the committed training state (Horovod's ObjectState), made when training starts
        self.state: Any = None

    # -- the process's place: kept across re-initializations (and after a removal) -------------
    @property
    def rank(self) -> int:
        """This process's rank now (it changes when the job's membership does)."""
        placement = self.__dict__.get("_placement")
        return self.hvd.rank() if placement is None else placement[0]

    @property
    def size(self) -> int:
        """The number of processes now."""
        placement = self.__dict__.get("_placement")
        return self.hvd.size() if placement is None else placement[1]

    @property
    def is_chief(self) -> bool:  # type: ignore[override]  # read-only: the rank decides
        """Whether this process is rank 0 now."""
        return self.rank == 0

    def _read_placement(self) -> None:
        self._placement = (self.hvd.rank(), self.hvd.size())

    # -- setup ----------------------------------------------------------------------------------
    def default_input(self, dataflow: Any) -> InputSource:
        """What ``launch_train_with_config`` gives this trainer for a dataflow: the trainer's own
        :class:`ElasticFeedInput` of it (no QueueInput: the rank and size of a step are known only
        when it starts, so nothing may be read ahead)."""
        return self._as_input_source(dataflow)

    def _as_input_source(self, input: Any) -> InputSource:
        """An :class:`ElasticFeedInput` of the whole dataflow (a ShardedDataFlow is unwrapped)."""
        if isinstance(input, ElasticFeedInput) and input.placement_of(self):
            return input  # made by default_input
        if isinstance(input, InputSource):
            raise TypeError(
                f"ElasticHorovodTrainer.setup_graph() takes a dataflow (the whole one: the trainer shares it "
                f"out among the ranks and keeps its position across membership changes), got the "
                f"InputSource {input!r}; pass the dataflow it wraps")
        if isinstance(input, ShardedDataFlow):
            logger.info("ElasticHorovodTrainer: shard_dataflow(..., rank=%d, size=%d) is unwrapped: the trainer "
                        "shares out the whole dataflow among the ranks itself, again at every membership "
                        "change.", input.rank, input.size)
            input = input.dataflow
        return ElasticFeedInput(input, self._current_placement)

    def _current_placement(self) -> tuple[int, int]:
        """(rank, size) of this process now; what its ElasticFeedInput asks at every step."""
        return self._placement

    def register_callback(self, cb: Callback | Sequence[Callback]) -> Any:
        """Chief-only callbacks are kept on every rank, behind a :class:`ChiefGate`."""
        if isinstance(cb, (list, tuple)):
            return [self.register_callback(c) for c in cb]
        if isinstance(cb, Callback) and cb.chief_only and not isinstance(cb, ChiefGate):
            cb = ChiefGatedMonitor(cb) if isinstance(cb, MonitorBase) else ChiefGate(cb)
        return super().register_callback(cb)

    def _monitors_of_this_rank(self, monitors: Sequence[MonitorBase]) -> Sequence[MonitorBase]:
        """Monitors writing into the logger directory write on the current rank 0 only (no collective
        here: a worker that joins later must not run one outside the elastic run)."""
        return monitors_of_process(monitors, is_chief=self.is_chief, process="ElasticHorovodTrainer",
                                   gate=lambda m: m if isinstance(m, ChiefGate) else ChiefGatedMonitor(m))

    def _sync_from_chief(self) -> None:
        """Nothing here: the elastic run's first synchronization broadcasts rank 0's state."""

    @property
    def elastic_variables(self) -> list[tf.Variable]:
        """The variables committed and broadcast: every variable of the checkpoint objects."""
        found: dict[int, tf.Variable] = {}
        for v in self.broadcast_targets:
            found.setdefault(id(v), v)
        for obj in self.checkpoint_objects.values():
            for v in map(tf_variable, variables_of(obj)):
                found.setdefault(id(v), v)
        return list(found.values())

    # -- the elastic run ------------------------------------------------------------------------------
    def _run_epochs(self, group: Any, steps_per_run: int) -> None:  # type: ignore[override]  # sets the hooks itself
        """The epochs under Horovod's elastic ``run_fn``: sync, train, and on a failure or a
        membership change roll back / re-initialize and go on."""
        run_fn, _, internal_error, reset = _horovod_elastic()
        self.state = state = _state_class()(self)
        state.register_reset_callbacks([self._after_reset])

        def train(state: Any) -> None:
            with _collective_failures_as(internal_error):
                self._train_epochs(state, group, steps_per_run)

        # a process whose slot the driver removes does not come back from the reset: Horovod's
        # re-initialization aborts it (std::terminate in hvd.init), and the driver ignores its exit
        run_fn(train, reset)(state)

    def _after_reset(self) -> None:
        """Horovod re-initialized (reset callback): take the new rank and size."""
        old = self._placement
        self._read_placement()
        logger.info("ElasticHorovodTrainer: re-initialized: rank %d of %d (was %d of %d).",
                    self.rank, self.size, *old)

    def _train_epochs(self, state: Any, group: Any, steps_per_run: int) -> None:
        """The body of the elastic run: the loop's epochs from the committed position, committing."""
        self._read_placement()
        # the committed state, rank 0's: after a removal Horovod skips the sync (the survivors all
        # committed just before), but a process that is rank 0 now must still take the old rank
        # 0's state of the chief-only callbacks, which it never ran
        _apply(self, state.training)
        self._adapt_to_world_size(state)
        loop = self.loop
        last_commit = [loop.global_step]

        def commit() -> None:
            state.commit()
            last_commit[0] = loop.global_step

        def commit_when_due() -> None:
            if (loop.global_step - last_commit[0] >= self.commit_every
                    and loop.local_step < loop.steps_per_epoch - 1):  # the epoch's end commits anyway
                commit()

        super()._run_epochs(group, steps_per_run, after_step=commit_when_due, after_epoch=commit)

    def _adapt_to_world_size(self, state: Any) -> None:
        """After a membership change: retrace the step for the new size, call the callbacks'
        ``on_world_size_change`` and make the result the committed state (on every rank alike)."""
        size = self.size
        if self._traced_size != size:
            # the traced step took its all-reduces (or their absence, with one rank) from the size
            self.train_op = TracedStep(self._step_body, self.input.feed_signature(), name="train_step",
                                       multi_step=self.steps_per_run > 1)
            self.train_op.trace(())
            self._traced_size = size
        old = state.training["world_size"]
        if old == size:
            return
        called = notify_world_size_change(self, old, size)
        logger.info("ElasticHorovodTrainer: world size %d -> %d at global step %d (rank %d now)%s.", old, size,
                    self.global_step, self.rank, f"; told {', '.join(called)}" if called else "")
        self.elastic_events.append({"kind": "resize", "time": time.time(), "global_step": self.global_step,
                                    "old_size": old, "new_size": size})
        state.training = {**state.training, "world_size": size}
        state.save()


def _make_state_class() -> type:
    _, object_state, _, _ = _horovod_elastic()

    class _ElasticTrainingState(object_state):  # type: ignore[valid-type, misc]  # Horovod's, imported when used
        """The whole training state of an :class:`ElasticHorovodTrainer` (``trainer.state``),
        committed in host memory.

        Variables (``trainer.elastic_variables``) are copied as arrays; the rest (``training``:
        loop counters, input position, the stateful callbacks' values, the monitors' latest
        scalars, the world size it was committed at) is captured on rank 0 and broadcast to
        every rank at each commit, so that any survivor holds the chief's picture of it.
        """

        def __init__(self, trainer: ElasticHorovodTrainer) -> None:
            self.trainer = trainer
            self.variables = trainer.elastic_variables
            self._values = [v.numpy() for v in self.variables]
            self.committed_step = trainer.global_step
            super().__init__(bcast_object=trainer.hvd.broadcast_object, get_rank=trainer.hvd.rank,
                             training=_capture(trainer))

        def commit(self) -> None:
            t = self.trainer
            start = time.perf_counter()
            self.training = t.hvd.broadcast_object(_capture(t) if t.hvd.rank() == 0 else None, root_rank=0,
                                                   name="trainstack_elastic_commit")
            self.save()
            t.elastic_events.append({"kind": "commit", "time": time.time(), "global_step": self.committed_step,
                                     "seconds": time.perf_counter() - start})
            self.check_host_updates()  # may raise HostsUpdatedInterrupt: the committed state is the sync point

        def save(self) -> None:
            self._values = [v.numpy() for v in self.variables]
            self.committed_step = self.trainer.global_step
            super().save()

        def restore(self) -> None:
            rolled_back = self.trainer.global_step
            for v, value in zip(self.variables, self._values):
                v.assign(value)
            super().restore()
            _apply(self.trainer, self.training)
            logger.warning("ElasticHorovodTrainer: a collective failed (a worker died or left); rolled back "
                           "from global step %d to the commit of step %d.", rolled_back, self.trainer.global_step)
            self.trainer.elastic_events.append({"kind": "rollback", "time": time.time(),
                                                "global_step": self.trainer.global_step, "from_step": rolled_back})

        def sync(self) -> None:
            self.trainer._read_placement()
            with _collective_failures_as(_horovod_elastic()[2]):  # a worker that dies now: roll back, again
                self.trainer.hvd.broadcast_variables(self.variables, root_rank=0)
                super().sync()  # the committed `training` of rank 0
            self._values = [v.numpy() for v in self.variables]
            _apply(self.trainer, self.training)
            self.committed_step = self.trainer.global_step

    return _ElasticTrainingState


@functools.cache
def _state_class() -> type:
    """The state class, built on Horovod's ObjectState once Horovod is imported."""
    return _make_state_class()


@contextlib.contextmanager
def _collective_failures_as(internal_error: type) -> Iterator[None]:
    """Raise ``internal_error`` (Horovod's HorovodInternalError, on which ``run_fn`` rolls back and
    re-initializes) for a collective that failed because a worker died or Horovod shut down."""
    try:
        yield
    except HorovodShutdownError as e:
        raise internal_error(str(e)) from e
    except tf.errors.OpError as e:
        if any(mark in str(e) for mark in _HOROVOD_FAILURE_MARKS):
            raise internal_error(str(e)) from e
        raise


# -- capturing and applying the non-variable state ----------------------------------------------
def _capture(trainer: ElasticHorovodTrainer) -> dict[str, Any]:
    """What a commit keeps besides the variables (plain Python and NumPy values)."""
    hub = trainer.monitors
    return {
        "loop": trainer.loop.state_dict(),
        "position": trainer.input.position,  # type: ignore[attr-defined]  # an elastic trainer's input
        "world_size": trainer.size,
        "callbacks": {key: [np.array(v.numpy()) for v in cb.checkpoint_state().variables]
                      for key, _, cb in stateful_callbacks(trainer)},
        "scalars": {name: hub.get_latest(name) for name in hub.scalar_names()} if hub is not None else {},
    }


def _apply(trainer: ElasticHorovodTrainer, training: dict[str, Any]) -> None:
    """Set the trainer's loop, input position, stateful callbacks and latest scalars to ``training``."""
    trainer.loop.load_state_dict(training["loop"])
    trainer.input.position = training["position"]  # type: ignore[attr-defined]
    saved = training["callbacks"]
    for key, _, cb in stateful_callbacks(trainer):
        if key not in saved:
            continue
        variables = cb.checkpoint_state().variables
        if len(variables) != len(saved[key]):
            raise RuntimeError(f"ElasticHorovodTrainer: callback {key} holds {len(variables)} state variables "
                               f"here but {len(saved[key])} in the committed state: every rank must run the "
                               "same callbacks")
        for v, value in zip(variables, saved[key]):
            v.assign(value)
        cb.load_checkpoint_state()
    hub = trainer.monitors
    if hub is not None and training["scalars"]:
        writers, hub.monitors = hub.monitors, []  # into the history, to no writer
        try:
            for name, value in training["scalars"].items():
                hub.put_scalar(name, value)
        finally:
            hub.monitors = writers
