"""Checkpoints: save the trainer's model and loop state; keep the best one.

The trainer contract
--------------------
A trainer that can be checkpointed has an attribute (or property)
``checkpoint_objects``: a dict ``name -> trackable`` (``tf.Variable``,
``tf.Module``, Keras model, layer or optimizer) naming everything a
checkpoint holds. It is read once, at ``setup_graph``; the objects are
tracked, not their variables, so variables created later (optimizer slots)
are saved too. The towers layer implements it; a trainer without it gets a
clear error at ``setup_graph``.

What a checkpoint holds
-----------------------
``tf.train.Checkpoint(**trainer.checkpoint_objects, loop_state=...)``:
the names are the dict's keys, so plain TensorFlow restores the model with
``tf.train.Checkpoint(w=..., b=...).restore(path).expect_partial()``. The
loop counters (``trainer.loop.state_dict()``) are stored under
``loop_state/<key>`` as scalar variables (int64, or bool for flags), readable
by any TensorFlow program; :func:`load_loop_state` / :func:`restore_loop_state`
read them back to resume a run. :class:`ModelSaver`'s checkpoints also hold, under
``monitor_state/``, the monitors' state: the moving averages of ``add_moving_summary``
and what stateful callbacks (``StatMonitorParamSetter``, ``EarlyStopping``, ...) keep
across epochs (see :mod:`~trainstack.callbacks.callback_state`); a run resumed from one
restores it, so its statistics are those of the uninterrupted run.
This layout (the keys, the savers' bookkeeping keys ``SAVER_KEYS``, how a checkpoint's
values pair with a trainer's variables) is defined once, in
:mod:`~trainstack.callbacks.checkpoint_layout`, which the initializers read it with.

Files are written by ``tf.train.CheckpointManager`` as
``<dir>/model-<global_step>.{index,data-*}`` plus the ``checkpoint`` state
file. TensorFlow writes each checkpoint's shards to a temporary prefix and
merges them into place before it rewrites the state file (atomically, by
rename), and deletes old checkpoints only after that; so
``tf.train.latest_checkpoint`` never names a half-written checkpoint and a
crash while saving loses nothing already saved.

The directory belongs to one run: a saver holds its lock from ``setup_graph`` to the end of
training (:mod:`~trainstack.callbacks.logdir_lock`), then removes what an interrupted save left
(``model-<N>_temp/`` folders) and rebuilds a missing or damaged state file from the checkpoints
it lists (:mod:`~trainstack.callbacks.checkpoint_files`). A save that fails (a full disk, a
directory gone) stops the run with :class:`~trainstack.callbacks.storage.StorageError`, which
names the checkpoint, the cause and the last good checkpoint (the rule of every writer, see
:mod:`~trainstack.callbacks.storage`).
"""
from __future__ import annotations

import logging
import math
import os
import shutil
from collections.abc import Mapping
from typing import Any

import numpy as np
import tensorflow as tf

from trainstack.loop import Callback, Trainer
from trainstack.loop.checks import check_bool, check_int, check_number

from . import tf_private
from .callback_state import MONITOR_STATE_KEY, MonitorState
from .checkpoint_files import checkpoint_number, last_checkpoint, repair_checkpoint_dir
from .checkpoint_layout import BEST_STAT_KEY, LOOP_STATE_KEY, SAVER_KEYS, VALUE_SUFFIX, saver_checkpoint
from .logdir import get_logger_dir
from .logdir_lock import WriterLock
from .storage import STORAGE_ERRORS, StorageError
from .variables import variables_of

__all__ = ["ModelSaver", "MinSaver", "MaxSaver", "load_loop_state", "restore_loop_state",
           "LOOP_STATE_KEY", "MONITOR_STATE_KEY", "SAVER_KEYS"]

logger = logging.getLogger("trainstack.callbacks")

# what says where a run is: a resumed run continues from the checkpoint whose values these are
_POSITION_KEYS = ("epoch_num", "local_step", "global_step", "epoch_finished")


# -- helpers shared by the savers -------------------------------------------------------------
def checkpoint_objects_of(trainer: Any, who: str) -> dict[str, Any]:
    """``trainer.checkpoint_objects`` (name -> tf.Variable, tf.Module or Keras object), checked: what
    every checkpoint of a trainer holds. ``who`` (the caller's name) opens every error message."""
    try:
        objects = trainer.checkpoint_objects
    except AttributeError as e:
        raise AttributeError(
            f"{who} needs trainer.checkpoint_objects (a dict name -> tf.Variable, tf.Module or "
            f"Keras model/optimizer, listing what a checkpoint holds); "
            f"{type(trainer).__name__} has none, or not yet: trainers have them once their graph "
            f"is built ({e})") from e
    if not isinstance(objects, Mapping) or not objects:
        raise TypeError(f"{who}: {type(trainer).__name__}.checkpoint_objects must be a non-empty "
                        f"dict name -> trackable, got {objects!r}")
    for key, obj in objects.items():
        if not isinstance(key, str) or not key:
            raise TypeError(f"{who}: checkpoint_objects keys must be non-empty strings, got {key!r}")
        if key in SAVER_KEYS:
            raise ValueError(f"{who}: checkpoint_objects key {key!r} is reserved by the savers; "
                             f"rename it (reserved: {sorted(SAVER_KEYS)})")
        if not isinstance(obj, tf_private.Trackable):
            raise TypeError(f"{who}: checkpoint_objects[{key!r}] is {type(obj).__name__}, which "
                            "tf.train.Checkpoint cannot save; expected a tf.Variable, tf.Module or "
                            "Keras object")
    return dict(objects)


def _loop_state_module(state: Mapping[str, Any]) -> tf.Module:
    """Scalar variables holding the loop counters (int64; bool for flags)."""
    module = tf.Module(name=LOOP_STATE_KEY)
    with tf.device("CPU:0"):
        for key, value in state.items():
            dtype = tf.bool if isinstance(value, bool) else tf.int64
            setattr(module, key, tf.Variable(value, dtype=dtype, trainable=False, name=key))
    return module


def _capture_loop_state(module: tf.Module, trainer: Trainer) -> None:
    for key, value in trainer.loop.state_dict().items():
        getattr(module, key).assign(value)


def _non_finite(objects: Mapping[str, Any]) -> str | None:
    """The first variable of ``objects`` holding a NaN or an infinity (its path), or None."""
    for key, obj in objects.items():
        for v in variables_of(obj):
            if tf.as_dtype(v.dtype).is_floating and not np.isfinite(v.numpy()).all():
                return f"{key}/{getattr(v, 'path', None) or v.name}"
    return None


def _refuse_non_finite(saver: Callback, objects: Mapping[str, Any], directory: str | None,
                       latest: str | None) -> bool:
    """Whether ``saver`` must not save now because the weights are not finite (logged, and
    training is stopped: a NaN does not heal, and the good checkpoints must stay). The message
    names where the first non-finite value appeared when the trainer knows it, and the run
    then ends with NonFiniteError (see ``Trainer.stop_on_nonfinite``)."""
    bad = _non_finite(objects)
    if bad is None:
        return False
    error = saver.trainer.stop_on_nonfinite(
        f"{saver.name}: not saving global_step {saver.global_step}: {bad} holds NaN or Inf.",
        then=f"The last good checkpoint is {latest or f'none (in {directory})'}")
    logger.error("%s", error)
    return True


def _resolve_dir(checkpoint_dir: str | os.PathLike | None, who: str) -> str:
    directory = os.fspath(checkpoint_dir) if checkpoint_dir is not None else get_logger_dir()
    if directory is None:
        raise ValueError(f"{who} has no directory to write to: pass checkpoint_dir=..., or call "
                         "trainstack.callbacks.set_logger_dir() before training")
    tf.io.gfile.makedirs(directory)
    return directory


_checkpoint_number = checkpoint_number  # the number at the end of a checkpoint prefix


def _own(lock: WriterLock, directory: str, who: str) -> None:
    """Take the directory's lock for this run; the first time, clean up what an interrupted run
    left there (temporary folders, a damaged state file)."""
    if not lock.held:
        lock.take(directory)
        repair_checkpoint_dir(directory, who)


def _save(saver: Callback, manager: tf.train.CheckpointManager, directory: str) -> str:
    """``manager.save`` at the saver's global_step; a storage error becomes :class:`StorageError`
    after the partial files of this save (its ``_temp`` folder) are removed to free the space. The
    last good checkpoint it names is the one recorded before this save began."""
    last_good = manager.latest_checkpoint
    try:
        return manager.save(checkpoint_number=saver.global_step)
    except STORAGE_ERRORS as e:
        prefix = os.path.join(directory, f"model-{saver.global_step}")
        shutil.rmtree(prefix + "_temp", ignore_errors=True)
        raise StorageError(saver.name, "the checkpoint", prefix, e, directory, last_good=last_good) from e


def _check_dir_arg(checkpoint_dir: Any) -> None:
    if checkpoint_dir is not None and not isinstance(checkpoint_dir, (str, os.PathLike)):
        raise TypeError(f"checkpoint_dir must be a path or None, got {checkpoint_dir!r}")


# -- loop state ------------------------------------------------------------------------------------
def load_loop_state(path: str | os.PathLike) -> dict[str, int | bool]:
    """The loop counters stored in a checkpoint written by :class:`ModelSaver` or :class:`MinSaver`.

    ``path`` is a checkpoint prefix (``.../model-300``) or a directory (its latest checkpoint: the
    one its state file names, else the newest it lists).
    """
    path = os.fspath(path)
    if tf.io.gfile.isdir(path):
        latest = last_checkpoint(path)
        if latest is None:
            raise FileNotFoundError(f"no checkpoint in directory {path!r}")
        path = latest
    reader = tf.train.load_checkpoint(path)
    prefix = LOOP_STATE_KEY + "/"
    state: dict[str, int | bool] = {}
    for name, dtype in reader.get_variable_to_dtype_map().items():
        if name.startswith(prefix) and name.endswith(VALUE_SUFFIX):
            key = name[len(prefix):-len(VALUE_SUFFIX)]
            value = reader.get_tensor(name)
            state[key] = bool(value) if dtype == tf.bool else int(value)
    if not state:
        raise KeyError(f"checkpoint {path!r} holds no loop state (no '{prefix}*' variables); "
                       "it was not written by ModelSaver or MinSaver")
    return state


def restore_loop_state(trainer: Trainer, path: str | os.PathLike) -> dict[str, int | bool]:
    """Load the loop counters of checkpoint ``path`` into ``trainer.loop`` (to resume); return them."""
    state = load_loop_state(path)
    trainer.loop.load_state_dict(state)
    return state


# -- the savers ---------------------------------------------------------------------------------
class ModelSaver(Callback):
    """Save a checkpoint of the trainer (see the module docstring) when triggered.

    Triggered at each epoch by default (wrap in ``PeriodicTrigger`` to change that), and once
    more in ``after_train`` when the last epoch finished after the last save, so the final
    model is never lost, or when SIGTERM / Ctrl-C interrupted training (a checkpoint of the
    last step, mid-epoch: resuming from it misses no step). A run that failed mid-epoch is
    not saved then: its state may be bad, and saving could rotate a good checkpoint out.

    ``max_to_keep`` (None: keep all) and ``keep_checkpoint_every_n_hours`` are those of
    ``tf.train.CheckpointManager``; "keep" means "do not delete", not "create".
    ``checkpoint_dir`` defaults to the logger directory, as in tensorpack.

    A checkpoint also holds the monitors' state (moving averages, callbacks' histories, the
    monitors' latest scalars; see :mod:`~trainstack.callbacks.callback_state`). When the
    run resumes (its loop state was loaded, e.g. by ``AutoResumeTrainConfig``) at the
    position saved in one of this saver's checkpoints, ``before_train`` restores that state
    from it, so that the run logs what the uninterrupted run would; otherwise it starts
    afresh (logged). So that a checkpoint holds the state *after* the epoch, wherever
    ModelSaver stands among the callbacks, one triggered at an epoch's end is written once
    the epoch's other callbacks have run (the averages put, a param changed): at the next
    ``before_epoch``, or in ``after_train``. A checkpoint triggered mid-epoch
    (``PeriodicTrigger(every_k_steps=...)``) is written at once.
    """

    def __init__(self, max_to_keep: int | None = 10, keep_checkpoint_every_n_hours: float | None = 0.5,
                 checkpoint_dir: str | os.PathLike | None = None) -> None:
        max_to_keep = check_int("ModelSaver", "max_to_keep", max_to_keep, minimum=1, none_ok=True,
                                note="None keeps every checkpoint")
        check_number("ModelSaver", "keep_checkpoint_every_n_hours", keep_checkpoint_every_n_hours,
                     minimum=0, none_ok=True)
        _check_dir_arg(checkpoint_dir)
        self._max_to_keep = max_to_keep
        self._keep_every_n_hours = keep_checkpoint_every_n_hours or None
        self._checkpoint_dir_arg = checkpoint_dir
        self.checkpoint_dir: str | None = None
        self._failed = False  # a save failed: the run is stopping, nothing more is saved
        self._lock = WriterLock(self.name)

    def _setup_graph(self) -> None:
        self.checkpoint_dir = _resolve_dir(self._checkpoint_dir_arg, self.name)
        if self.trainer.is_chief:  # else in before_train, should this process become the chief
            _own(self._lock, self.checkpoint_dir, self.name)
        self._objects = objects = checkpoint_objects_of(self.trainer, self.name)
        self._loop_state = _loop_state_module(self.trainer.loop.state_dict())
        self._monitor_state = MonitorState()
        self.checkpoint = saver_checkpoint(objects, **{LOOP_STATE_KEY: self._loop_state,
                                                       MONITOR_STATE_KEY: self._monitor_state})
        self.manager = tf.train.CheckpointManager(
            self.checkpoint, self.checkpoint_dir, max_to_keep=self._max_to_keep,
            keep_checkpoint_every_n_hours=self._keep_every_n_hours, checkpoint_name="model")
        self._pending: int | None = None  # global_step of an epoch-end checkpoint not written yet

    def _before_train(self) -> None:
        assert self.checkpoint_dir is not None  # set by _setup_graph
        _own(self._lock, self.checkpoint_dir, self.name)
        loop = self.trainer.loop
        if not loop.resumed or loop.global_step == 0:
            return
        path = self._checkpoint_of_position()
        if path is None:
            logger.info("%s: the run resumes at global_step %d, but %s holds no checkpoint of that "
                        "position: moving averages and callbacks' histories start afresh.", self.name,
                        loop.global_step, self.checkpoint_dir)
            return
        MonitorState.restore(self.trainer, path, self.name)

    def _checkpoint_of_position(self) -> str | None:
        """This saver's checkpoint of the loop's current position (that of a resumed run), or None."""
        current = self.trainer.loop.state_dict()
        assert self.checkpoint_dir is not None  # set by _setup_graph
        path = os.path.join(self.checkpoint_dir, f"model-{current['global_step']}")
        if not tf.io.gfile.exists(path + ".index"):
            return None
        try:
            saved = load_loop_state(path)
        except (KeyError, ValueError, tf.errors.OpError):
            return None
        return path if all(saved.get(k) == current[k] for k in _POSITION_KEYS) else None

    def _trigger(self) -> None:
        if self.trainer.loop.epoch_finished:
            # at an epoch's end: written once every callback has run its trigger of the epoch
            # (the averages put, the params set), at the next before_epoch or in after_train
            _capture_loop_state(self._loop_state, self.trainer)
            self._pending = self.global_step
        else:
            self.save()

    def last_checkpoint(self) -> tuple[int, str] | None:
        """``(global step, path)`` of the newest checkpoint in this saver's directory (written by
        this run or, resuming, by the one before), or None."""
        manager = getattr(self, "manager", None)  # made by setup_graph
        path = manager.latest_checkpoint if manager is not None else None
        step = _checkpoint_number(path)
        return None if step is None or path is None else (step, path)

    def _before_epoch(self) -> None:
        self._write_pending()

    def _after_train(self) -> None:
        assert self.checkpoint_dir is not None  # set by _setup_graph
        try:
            self._write_pending()
            loop = self.trainer.loop
            if ((loop.epoch_finished or loop.interrupted) and self.global_step > 0 and not self._failed
                    and _checkpoint_number(self.manager.latest_checkpoint) != self.global_step):
                self.save()
        finally:
            self._lock.give_back()

    def _write_pending(self) -> None:
        step, self._pending = self._pending, None
        if step is None or self._failed:
            return
        if step != self.global_step:  # a wrapper skipped before_epoch and steps ran since
            logger.warning("%s: the checkpoint of global_step %d was not written: its before_epoch "
                           "did not run before the next steps (a wrapper skipped it).", self.name, step)
            return
        self._write()

    def save(self) -> str | None:
        """Write a checkpoint now, numbered by ``global_step``; return its path (None when the
        weights are not finite). A write that fails raises :class:`StorageError`."""
        _capture_loop_state(self._loop_state, self.trainer)
        return self._write()

    def _write(self) -> str | None:
        """Write the checkpoint of the loop state captured last and of everything else now."""
        if _refuse_non_finite(self, self._objects, self.checkpoint_dir, self.manager.latest_checkpoint):
            return None
        self._monitor_state.capture(self.trainer)
        assert self.checkpoint_dir is not None  # set by _setup_graph
        try:
            path = _save(self, self.manager, self.checkpoint_dir)
        except StorageError:
            self._failed = True
            raise
        logger.info("Model saved to %s.", path)
        return path


class MinSaver(Callback):
    """Keep the checkpoint of the model with the minimum of a statistic.

    When triggered (each epoch by default) it reads ``monitor_stat`` from
    ``trainer.monitors.get_latest``; when that improves on the best so far it saves the
    current model (same contents as :class:`ModelSaver`, plus ``best_stat``) with a
    ``CheckpointManager(max_to_keep=1)`` in ``<checkpoint_dir>/<filename>``, where
    ``filename`` defaults to ``min-<stat>`` (``max-<stat>`` with ``reverse=True``). Restore
    it with ``tf.train.latest_checkpoint`` on that directory. It does not need a ModelSaver.

    Put it after the callback that produces the statistic, so that the stat it reads was
    computed from the weights it saves. A missing or non-finite stat is a warning, not an
    error. When the directory already holds a best checkpoint (a resumed run), its
    ``best_stat`` is the value to beat.
    """

    def __init__(self, monitor_stat: str, reverse: bool = False, filename: str | None = None,
                 checkpoint_dir: str | os.PathLike | None = None) -> None:
        if not isinstance(monitor_stat, str) or not monitor_stat:
            raise TypeError(f"monitor_stat must be the name of a scalar statistic, got {monitor_stat!r}")
        if filename is not None and (not isinstance(filename, str) or not filename):
            raise TypeError(f"filename must be a non-empty string or None, got {filename!r}")
        _check_dir_arg(checkpoint_dir)
        self.monitor_stat = monitor_stat
        self.reverse = check_bool(type(self).__name__, "reverse", reverse)
        self.filename = filename or f"{'max' if self.reverse else 'min'}-{monitor_stat}"
        self._checkpoint_dir_arg = checkpoint_dir
        self.directory: str | None = None
        self._lock = WriterLock(self.name)

    @property
    def best(self) -> float | None:
        """The best value of the statistic so far (None before the first save)."""
        value = float(self._best_stat.numpy())
        return None if math.isnan(value) else value

    def _setup_graph(self) -> None:
        self._base = base = _resolve_dir(self._checkpoint_dir_arg, self.name)
        self.directory = os.path.join(base, self.filename)
        if self.trainer.is_chief:  # else in before_train, should this process become the chief
            self._own()
        self._objects = objects = checkpoint_objects_of(self.trainer, self.name)
        self._loop_state = _loop_state_module(self.trainer.loop.state_dict())
        with tf.device("CPU:0"):
            self._best_stat = tf.Variable(math.nan, dtype=tf.float64, trainable=False, name=BEST_STAT_KEY)
        checkpoint = saver_checkpoint(objects, **{LOOP_STATE_KEY: self._loop_state,
                                                  BEST_STAT_KEY: self._best_stat})
        self.manager = tf.train.CheckpointManager(checkpoint, self.directory, max_to_keep=1,
                                                  checkpoint_name="model")
        previous = self.manager.latest_checkpoint
        if previous is not None:
            try:
                self._best_stat.assign(tf.train.load_variable(previous, BEST_STAT_KEY + VALUE_SUFFIX))
            except (tf.errors.NotFoundError, ValueError):
                logger.warning("%s: %s holds checkpoint %s without a %r value; it will be replaced "
                               "by the first model saved.", self.name, self.directory, previous,
                               BEST_STAT_KEY)
                return
            logger.info("%s: %s already holds a best checkpoint with %s=%.5g; that is the value to beat.",
                        self.name, self.directory, self.monitor_stat, self.best)

    def _trigger(self) -> None:
        assert self.trainer.monitors is not None
        try:
            value = self.trainer.monitors.get_latest(self.monitor_stat)
        except KeyError as e:
            logger.warning("%s: cannot read the statistic: %s. Nothing saved; check the name, and "
                           "that the callback producing it runs before %s.", self.name, e.args[0],
                           self.name)
            return
        if not math.isfinite(value):
            logger.warning("%s: %s=%r is not finite; nothing saved.", self.name, self.monitor_stat, value)
            return
        best = self.best
        if best is None or (value > best if self.reverse else value < best):
            self._save(value)

    def _save(self, value: float) -> None:
        if _refuse_non_finite(self, self._objects, self.directory, self.manager.latest_checkpoint):
            return
        _capture_loop_state(self._loop_state, self.trainer)
        previous_best = self._best_stat.numpy()
        self._best_stat.assign(value)  # before saving: the checkpoint records its own stat
        assert self.directory is not None  # set by _setup_graph
        try:
            path = _save(self, self.manager, self.directory)
        except StorageError:
            self._best_stat.assign(previous_best)
            raise
        logger.info("Model at global_step=%d with %s %s=%.5g saved to %s.", self.global_step,
                    "maximum" if self.reverse else "minimum", self.monitor_stat, value, path)

    def _own(self) -> None:
        """Take the run's lock on the base directory; clean up this saver's own directory."""
        if not self._lock.held:
            assert self.directory is not None  # set by _setup_graph
            self._lock.take(self._base)
            repair_checkpoint_dir(self.directory, self.name)

    def _before_train(self) -> None:
        self._own()

    def _after_train(self) -> None:
        self._lock.give_back()


class MaxSaver(MinSaver):
    """Keep the checkpoint of the model with the maximum of a statistic (see :class:`MinSaver`)."""

    def __init__(self, monitor_stat: str, filename: str | None = None,
                 checkpoint_dir: str | os.PathLike | None = None) -> None:
        super().__init__(monitor_stat, reverse=True, filename=filename, checkpoint_dir=checkpoint_dir)
