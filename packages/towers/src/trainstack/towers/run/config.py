"""TrainConfig and AutoResumeTrainConfig: a whole single-cost training run in one object.

``launch_train_with_config(config, trainer)`` (launch.py) turns a TrainConfig
into ``trainer.setup_graph(...)`` and ``trainer.train_with_defaults(...)``;
the config itself only validates and holds the arguments, so that a bad
argument fails when the config is built, before any graph is.

``AutoResumeTrainConfig`` is a TrainConfig that continues the run recorded
in the logger directory: the weights of its latest checkpoint and the loop
position (epoch, step, ``global_step``) saved beside them by ModelSaver.
"""
from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from typing import Any

import tensorflow as tf

from trainstack.callbacks import JSONWriter, get_logger_dir, load_loop_state
from trainstack.callbacks.checkpoint_files import (
    checkpoint_number,
    list_checkpoints,
    read_state_file,
    state_file_problem,
)
from trainstack.dataflow import dataflow_size
from trainstack.inputs import InputError, InputSource
from trainstack.loop import Callback, MonitorBase
from trainstack.loop.checks import check_bool, check_int
from trainstack.loop.stop import ON_NONFINITE

from ..session import ChainInit, CheckpointInit, ResumeError, SessionInit, SmartInit
from ..session.runtime import RuntimeConfig
from ..tower.model_desc import ModelDescBase

__all__ = ["TrainConfig", "AutoResumeTrainConfig", "LoopStateInit"]

logger = logging.getLogger("trainstack.towers")

#: tensorpack's arguments, which trainstack.tensorpack's TrainConfig takes: refused with an error naming it
TENSORPACK_ARGS = ("nr_tower", "tower", "predict_tower", "session_config", "session_creator")


class TrainConfig:
    """Everything ``launch_train_with_config`` needs to train a :class:`ModelDesc`.

    - ``dataflow`` (any re-iterable Python object yielding datapoints) or ``data``
      (an :class:`~trainstack.inputs.InputSource`): exactly one of them. A dataflow
      is wrapped by ``apply_default_prefetch`` (FeedInput for a plain SimpleTrainer,
      QueueInput otherwise). An InputSource serves one trainer, so a config with
      ``data=`` can be launched once; one with ``dataflow=`` any number of times.
    - ``model``: the :class:`ModelDesc` (``launch_train_with_config`` requires one).
    - ``callbacks``: your callbacks (default none). ``extra_callbacks``: added after
      them; None means the trainer's defaults, ``DEFAULT_CALLBACKS()``
      (MovingAverageSummary, ProgressBar, MergeAllSummaries, RunUpdateOps). Pass a
      list to replace them (e.g. ``[]``). ``monitors``: None means ``DEFAULT_MONITORS()``
      (TFEventWriter, JSONWriter, ScalarPrinter).
    - ``session_init``: how to initialise the variables after the graph is built:
      a SessionInit, or anything ``SmartInit`` accepts (a checkpoint path or
      directory, a dict of arrays, an ``.npz`` path, a list of these).
    - ``starting_epoch`` (default 1), ``max_epoch`` (default 99999; the number of the
      last epoch, included), ``steps_per_epoch``: default the input's size (one pass
      of the data), computed here so that an input of unknown size fails now. With
      K towers a step takes K batches, so the default epoch is K passes over the data
      (tensorpack's rule; a warning says so when training starts): divide it by K if
      an epoch should stay one pass.
    - ``runtime``: a :class:`RuntimeConfig` (threads, soft placement, GPU memory
      growth, XLA), applied by ``launch_train_with_config`` before anything else.
      It replaces TF1's ``session_config``/``session_creator``.
    - ``handle_signals`` (default True): while training, SIGTERM and Ctrl-C stop it after
      the current step, which ModelSaver saves, by handlers the loop installs for the time of
      the loop (in the main thread) and removes after. False leaves the process's own
      handlers alone (notebooks, hyper-parameter sweeps, programs with handlers of their
      own); then a SIGTERM does what the process's handler does (by default: the process
      ends at once, without a checkpoint of the current step) and Ctrl-C raises
      ``KeyboardInterrupt`` at once (the callbacks' ``after_train`` runs, savers do not
      save). Multi-process trainers then do not stop their processes together either.
    - ``on_nonfinite`` (default ``"raise"``): a run that a callback stops because of NaN or
      infinite values (a saver refusing to save NaN weights, ``TerminateOnNaN``) ends, once
      every callback's ``after_train`` has run (checkpoints and stats flushed), with
      ``NonFiniteError``, which names the first step whose loss or gradients were not finite
      and the tensor; uncaught, the program exits with an error status. ``"stop"`` ends such
      a run quietly (``launch_train_with_config`` returns), as tensorpack did. See also the
      trainers' ``skip_nonfinite_steps``, which skips such steps instead.

    tensorpack's arguments (``nr_tower``, ``tower``, ``predict_tower``, ``session_config``,
    ``session_creator``) are a TypeError naming what to pass instead; ``trainstack.tensorpack``'s
    TrainConfig, a subclass, takes them (through the hook :meth:`_check_trainer`).
    """

    def __init__(self, dataflow: Any = None, data: InputSource | None = None,
                 model: ModelDescBase | None = None, callbacks: Sequence[Callback] | None = None,
                 extra_callbacks: Sequence[Callback] | None = None,
                 monitors: Sequence[MonitorBase] | None = None, session_init: Any = None,
                 starting_epoch: int = 1, steps_per_epoch: int | None = None,
                 max_epoch: int = 99999, runtime: RuntimeConfig | None = None,
                 handle_signals: bool = True, on_nonfinite: str = "raise", **unknown: Any) -> None:
        _reject_unknown(unknown)
        self.dataflow, self.data = _check_input(dataflow, data)
        if model is not None and not isinstance(model, ModelDescBase):
            raise TypeError(f"TrainConfig(model=) must be a ModelDesc, got {model!r} "
                            f"({type(model).__name__})")
        self.model = model
        self.callbacks: list[Callback] = _check_callbacks("callbacks", callbacks or [], Callback)
        self.extra_callbacks: list[Callback] | None = (
            None if extra_callbacks is None
            else _check_callbacks("extra_callbacks", extra_callbacks, Callback))
        self.monitors: list[MonitorBase] | None = (
            None if monitors is None else _check_callbacks("monitors", monitors, MonitorBase))
        self.session_init: SessionInit | None = (
            None if session_init is None else SmartInit(session_init))
        self.starting_epoch = _check_int("starting_epoch", starting_epoch)
        self.max_epoch = _check_int("max_epoch", max_epoch)
        #: whether steps_per_epoch is the input's size because none was given
        self.steps_per_epoch_is_default = steps_per_epoch is None
        if steps_per_epoch is None:
            steps_per_epoch = self._input_size()
        elif _check_int("steps_per_epoch", steps_per_epoch) == 0:
            raise ValueError("TrainConfig(steps_per_epoch=0): an epoch needs at least one step")
        self.steps_per_epoch = int(steps_per_epoch)
        if runtime is not None and not isinstance(runtime, RuntimeConfig):
            raise TypeError(f"TrainConfig(runtime=) must be a RuntimeConfig, got {runtime!r} "
                            f"({type(runtime).__name__})")
        self.runtime = runtime
        self.handle_signals = check_bool("TrainConfig", "handle_signals", handle_signals)
        if on_nonfinite not in ON_NONFINITE:
            raise ValueError(f"TrainConfig(on_nonfinite=) must be one of {list(ON_NONFINITE)} ('raise': a run "
                             f"stopped by NaN ends with NonFiniteError; 'stop': it ends quietly), got "
                             f"{on_nonfinite!r}")
        self.on_nonfinite = on_nonfinite
        if self.max_epoch < self.starting_epoch:
            logger.warning("TrainConfig: max_epoch=%d is before starting_epoch=%d; no epoch will run.",
                           self.max_epoch, self.starting_epoch)

    def _check_trainer(self, trainer: Any, who: str) -> None:
        """Hook: ``launch_train_with_config`` calls it before ``trainer`` builds anything; a subclass
        raises there when it cannot train with ``trainer`` (``who``: the call, for the message).
        Nothing by default (``trainstack.tensorpack``'s TrainConfig checks its tower count)."""

    def _input_size(self) -> int:
        """The default steps_per_epoch: one pass of the dataflow or of the InputSource."""
        try:
            if self.dataflow is not None:
                return dataflow_size(self.dataflow, "TrainConfig's dataflow")
            assert self.data is not None
            return int(self.data.size())
        except InputError as e:
            raise ValueError(f"TrainConfig cannot default steps_per_epoch to the input's size: {e}. "
                             "Pass TrainConfig(steps_per_epoch=...)") from e

    def __repr__(self) -> str:
        source = (f"dataflow={type(self.dataflow).__name__}" if self.dataflow is not None
                  else f"data={self.data.name}")  # type: ignore[union-attr]  # one of the two is set
        return (f"{type(self).__name__}({source}, model={type(self.model).__name__}, "
                f"starting_epoch={self.starting_epoch}, steps_per_epoch={self.steps_per_epoch}, "
                f"max_epoch={self.max_epoch})")


class LoopStateInit(SessionInit):
    """Restore the loop position (epoch, step, ``global_step``) saved in a checkpoint.

    ModelSaver stores ``trainer.loop.state_dict()`` in each checkpoint; this loads it
    into ``trainer.loop`` so that the loop continues right after the saved step.
    ``starting_epoch`` becomes the epoch the run continues at (what the resumed
    run's TrainConfig says), unless ``starting_epoch`` is given: then the run starts
    afresh at that epoch and only ``global_step`` continues.
    """

    def __init__(self, path: str, starting_epoch: int | None = None) -> None:
        self.path = path
        self.state = load_loop_state(path)
        self.starting_epoch = (_resume_epoch(self.state) if starting_epoch is None
                               else _check_int("starting_epoch", starting_epoch, "LoopStateInit"))
        self._keep_position = starting_epoch is None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.path!r})"

    def _run_init(self, trainer: Any) -> None:
        state = dict(self.state, starting_epoch=self.starting_epoch)
        if not self._keep_position:
            state.update(epoch_num=self.starting_epoch - 1, local_step=-1, epoch_finished=True)
        trainer.loop.load_state_dict(state)
        logger.info("Loop state of %s loaded: continuing at epoch %d, global_step %d.", self.path,
                    self.starting_epoch, state["global_step"])


def _resume_epoch(state: dict) -> int:
    """The epoch a run continues at, from its saved loop state."""
    return state["epoch_num"] + 1 if state["epoch_finished"] else state["epoch_num"]


class AutoResumeTrainConfig(TrainConfig):
    """A TrainConfig that continues the run found in the logger directory.

    When ``get_logger_dir()`` (set it with ``set_logger_dir(dir, action="keep")``
    before building the config) holds a checkpoint, as ModelSaver writes there:

    1. ``session_init`` restores the checkpoint's weights (and optimizer state); a variable of
       the trainer that the checkpoint lacks (a model or optimizer changed or renamed since)
       is a ``ResumeError`` naming them and the checkpoint: a resumed run never trains on
       fresh weights (``CheckpointInit(resume=True)``);
    2. ``starting_epoch`` and the loop counters come from the loop state stored in
       the checkpoint, so the run continues right after the saved step with the same
       ``global_step``. A checkpoint without loop state falls back to the last epoch
       recorded in ``stats.jsonl`` (JSONWriter), as tensorpack does.

    ``always_resume=True`` (default): what the checkpoint says replaces the
    ``session_init``/``starting_epoch`` you pass (logged). ``always_resume=False``:
    those you pass win, and only what you did not pass is resumed. Without a logger
    directory or checkpoint this is a plain TrainConfig. Checkpoints written elsewhere
    (``ModelSaver(checkpoint_dir=...)``) are not looked for.

    The checkpoints are found by listing the directory (:meth:`find_checkpoint`), not only
    through TensorFlow's ``checkpoint`` state file, so a state file that was deleted, cut off
    or emptied loses nothing (ModelSaver rebuilds it). A directory that holds checkpoints none
    of which can be read is a ``ResumeError`` naming each and why: the run never starts on fresh
    weights over them. The config only reads the directory; it changes nothing there.
    """

    #: the checkpoint this run resumes from (None: a fresh run)
    resumed_from: str | None = None

    def __init__(self, always_resume: bool = True, **kwargs: Any) -> None:
        logdir = get_logger_dir()
        checkpoint = self.find_checkpoint(logdir)
        if checkpoint is None:
            if logdir is not None and JSONWriter.load_existing_epoch_number(logdir) is not None:
                logger.warning("AutoResumeTrainConfig: %s has training statistics but no checkpoint; "
                               "the run starts from the given arguments.", logdir)
            super().__init__(**kwargs)
            return
        assert logdir is not None  # it holds the checkpoint
        resume_weights = always_resume or "session_init" not in kwargs
        resume_position = always_resume or "starting_epoch" not in kwargs
        inits: list[SessionInit] = []
        if resume_weights:
            _log_override(kwargs, "session_init", f"the weights of {checkpoint}")
            inits.append(CheckpointInit(checkpoint, resume=True))
        elif kwargs.get("session_init") is not None:
            inits.append(SmartInit(kwargs["session_init"]))
            logger.info("AutoResumeTrainConfig: the given session_init is used instead of the "
                        "weights of %s (always_resume=False).", checkpoint)
        loop_init = self._loop_state_init(checkpoint, logdir,
                                          None if resume_position else kwargs["starting_epoch"])
        if loop_init is not None:
            inits.append(loop_init)
            epoch = loop_init.starting_epoch
        else:  # no loop state in the checkpoint: tensorpack's way, the epoch from stats.jsonl
            last = JSONWriter.load_existing_epoch_number(logdir) if resume_position else None
            epoch = kwargs.get("starting_epoch", 1) if last is None else last + 1
        if resume_position:
            _log_override(kwargs, "starting_epoch", f"epoch {epoch}")
        kwargs["starting_epoch"] = epoch
        kwargs["session_init"] = inits[0] if len(inits) == 1 else ChainInit(inits) if inits else None
        super().__init__(**kwargs)
        self.resumed_from = checkpoint
        logger.info("AutoResumeTrainConfig: resuming from %s at epoch %d.", checkpoint, epoch)

    @staticmethod
    def find_checkpoint(directory: str | os.PathLike | None = None) -> str | None:
        """The latest readable checkpoint in ``directory`` (default: the logger directory), or
        None when it holds no checkpoint.

        The candidates are those the ``checkpoint`` state file names, newest first, then the
        other ``model-<N>`` checkpoints found by listing the directory, highest N first; a
        missing, empty or damaged state file is noted and the listing alone decides. Each is
        read fully before it is trusted: a checkpoint whose files are missing or damaged (a disk
        that lost a write) is skipped, with a warning, for the one before it. When there are
        candidates and none can be read, a ``ResumeError`` names each one and why."""
        directory = get_logger_dir() if directory is None else os.fspath(directory)
        if not directory or not tf.io.gfile.isdir(directory):
            return None
        candidates = _candidates(directory)
        problems = []
        for path in candidates:
            problem = _unreadable(path)
            if problem is None:
                return path
            problems.append(f"{path}: {problem}")
            logger.warning("AutoResumeTrainConfig: checkpoint %s cannot be read (%s); trying the one "
                           "before it.", path, problem)
        if problems:
            raise ResumeError(
                f"AutoResumeTrainConfig: {directory} holds checkpoints, but none of them can be read, "
                "so the run cannot resume and will not start on fresh weights over them: "
                + "; ".join(problems) + ". Nothing in the directory was changed. Restore a checkpoint "
                "from a backup, or move the directory aside (set_logger_dir(dirname, action='b')) to "
                "start a new run.")
        return None

    @staticmethod
    def _loop_state_init(checkpoint: str, logdir: str,
                         starting_epoch: int | None) -> LoopStateInit | None:
        try:
            init = LoopStateInit(checkpoint, starting_epoch=starting_epoch)
        except KeyError:
            logger.warning("AutoResumeTrainConfig: %s holds no loop state (not written by ModelSaver); "
                           "global_step restarts at 0.", checkpoint)
            return None
        json_epoch = JSONWriter.load_existing_epoch_number(logdir)
        if json_epoch is not None and json_epoch != _resume_epoch(init.state) - 1:
            logger.info("AutoResumeTrainConfig: stats.jsonl ends at epoch %d but the checkpoint %s "
                        "was saved in epoch %d; training continues from the checkpoint.",
                        json_epoch, checkpoint, init.state["epoch_num"])
        return init


def _candidates(directory: str) -> list[str]:
    """The checkpoints a run in ``directory`` may resume from, in the order to try them: those the
    state file names (newest first), then the others its listing finds (highest number first)."""
    listed = list_checkpoints(directory)
    problem = state_file_problem(directory)
    state = None if problem in ("missing", "empty", "damaged") else read_state_file(directory)
    named = [] if state is None else [state.model_checkpoint_path, *reversed(
        [p for p in state.all_model_checkpoint_paths if p != state.model_checkpoint_path])]
    if problem is not None:
        logger.warning("AutoResumeTrainConfig: the checkpoint state file of %s is %s; using the "
                       "checkpoints found by listing the directory (%s). ModelSaver rebuilds the state "
                       "file when training starts.", directory, problem,
                       ", ".join(os.path.basename(p) for p in listed))
    seen = {os.path.normpath(p) for p in named}
    rest = [p for p in listed if os.path.normpath(p) not in seen]
    return named + sorted(rest, key=lambda p: checkpoint_number(p) or -1, reverse=True)


def _unreadable(path: str) -> str | None:
    """Why checkpoint ``path`` cannot be restored (its first line), or None when every value reads."""
    try:
        reader = tf.train.load_checkpoint(path)
        for name in reader.get_variable_to_shape_map():
            reader.get_tensor(name)
    except Exception as e:  # noqa: BLE001 - whatever the reader raises, the checkpoint is unusable
        text = str(e).strip()
        return f"{type(e).__name__}: {text.splitlines()[0]}" if text else type(e).__name__
    return None


# -- validation helpers ------------------------------------------------------------------------
_VALID_ARGS = ("dataflow", "data", "model", "callbacks", "extra_callbacks", "monitors",
               "session_init", "starting_epoch", "steps_per_epoch", "max_epoch", "runtime",
               "handle_signals", "on_nonfinite")


def _reject_unknown(kwargs: dict) -> None:
    unknown = sorted(kwargs)
    tensorpacks = [k for k in TENSORPACK_ARGS if k in kwargs]
    if tensorpacks:
        raise TypeError(f"TrainConfig({'=, '.join(tensorpacks)}=) are tensorpack's arguments: pass the devices to "
                        "a multi-GPU trainer (launch_train_with_config(config, SyncMultiGPUTrainerReplicated(gpus))) "
                        "and the runtime settings as runtime=RuntimeConfig(...); trainstack.tensorpack's TrainConfig "
                        "takes them (from trainstack.tensorpack import TrainConfig)")
    if "optimizer" in unknown:
        raise TypeError("TrainConfig(optimizer=) is not an argument: the optimizer comes from the "
                        "model (ModelDesc.optimizer())")
    if "dataset" in unknown:
        raise TypeError("TrainConfig(dataset=) was renamed dataflow= (or pass an InputSource as data=)")
    if unknown:
        raise TypeError(f"TrainConfig got unexpected arguments {unknown}; valid arguments are "
                        f"{list(_VALID_ARGS)}")


def _check_input(dataflow: Any, data: Any) -> tuple[Any, InputSource | None]:
    if dataflow is not None and data is not None:
        raise ValueError("TrainConfig takes either dataflow= or data=, not both: dataflow= for a "
                         "re-iterable Python object of datapoints, data= for an InputSource")
    if dataflow is None and data is None:
        raise ValueError("TrainConfig needs the training input: dataflow= (a re-iterable Python object "
                         "of datapoints) or data= (an InputSource)")
    if data is not None and not isinstance(data, InputSource):
        hint = (" (that is a dataflow: pass it as dataflow=)" if hasattr(data, "__iter__") else "")
        raise TypeError(f"TrainConfig(data=) must be an InputSource, got {type(data).__name__}{hint}")
    if dataflow is not None:
        if isinstance(dataflow, InputSource):
            raise TypeError(f"TrainConfig(dataflow=) got the InputSource {dataflow.name}; pass it "
                            "as data= instead")
        if isinstance(dataflow, tf.data.Dataset):
            raise TypeError("TrainConfig(dataflow=) got a tf.data.Dataset; pass "
                            "data=TFDatasetInput(dataset) so the step reads it inside the graph")
        if isinstance(dataflow, (str, bytes)) or not hasattr(dataflow, "__iter__"):
            raise TypeError(f"TrainConfig(dataflow=) must be a re-iterable object yielding datapoints "
                            f"(a list, a DataFlow, ...), got {dataflow!r:.80} "
                            f"({type(dataflow).__name__})")
    return dataflow, data


def _check_callbacks(what: str, items: Any, kind: type) -> list:
    if not isinstance(items, (list, tuple)):
        raise TypeError(f"TrainConfig({what}=) must be a list, got {items!r:.80} "
                        f"({type(items).__name__})")
    for i, cb in enumerate(items):
        if not isinstance(cb, kind):
            raise TypeError(f"TrainConfig({what}=): item {i} is {cb!r:.80} ({type(cb).__name__}), "
                            f"expected a {kind.__name__}")
        if kind is Callback and isinstance(cb, MonitorBase):
            raise TypeError(f"TrainConfig({what}=): item {i} ({cb.name}) is a monitor; pass it in "
                            "monitors=")
    return list(items)


def _check_int(what: str, value: Any, owner: str = "TrainConfig") -> int:
    return check_int(owner, what, value, minimum=0)


def _log_override(kwargs: dict, key: str, what: str) -> None:
    if kwargs.get(key) is not None:
        logger.info("AutoResumeTrainConfig: %s=%r is replaced by %s (always_resume=True).",
                    key, kwargs[key], what)
