"""tensorpack's ``TrainConfig``: the core's, with the older form's tower arguments and TF1's session ones.

``TrainConfig(nr_tower=, tower=, predict_tower=)`` (tensorpack 003): the training towers
must agree with the trainer's devices (the core's hook ``TrainConfig._check_trainer``, which
``launch_train_with_config`` and the older ``Trainer(config)`` call); several towers need the
multi-GPU trainers. ``predict_tower[k]`` is the device of ``legacy_get_predictor``'s ``tower=k``.

``session_config=`` and ``session_creator=`` (TF1's) are refused with a TypeError naming
:class:`~trainstack.towers.RuntimeConfig` and, for a ``ConfigProto``, the RuntimeConfig it
translates to (:func:`runtime_config_from_proto`). ConfigProto field -> RuntimeConfig argument:

- ``intra_op_parallelism_threads`` -> ``intra_op_threads``
- ``inter_op_parallelism_threads`` -> ``inter_op_threads``
- ``allow_soft_placement`` -> ``soft_placement``
- ``gpu_options.allow_growth`` -> ``gpu_memory_growth``
- ``gpu_options.visible_device_list`` ("0,2") -> ``visible_gpus`` ((0, 2))
- ``graph_options.optimizer_options.global_jit_level`` -> ``xla``
- ``device_count={"CPU": n}`` -> ``logical_cpu_devices`` (n logical CPU devices)
- ``gpu_options.per_process_gpu_memory_fraction``: no fraction in TF2; cap a GPU with
  ``tf.config.set_logical_device_configuration(gpu, [LogicalDeviceConfiguration(memory_limit=MB)])``.
"""
from __future__ import annotations

import numbers
from typing import Any

import tensorflow as tf

from trainstack.loop.checks import check_int, is_int
from trainstack.towers import CheckpointInit, RuntimeConfig
from trainstack.towers.run import config as core

__all__ = ["TrainConfig", "AutoResumeTrainConfig", "runtime_config_from_proto", "reject_session_args",
           "check_tower_count", "towers_of", "predict_towers_of"]


class TrainConfig(core.TrainConfig):
    """tensorpack's TrainConfig: the core's :class:`~trainstack.towers.TrainConfig`, which also takes
    the older form's ``nr_tower`` (number of training towers), ``tower`` (list of GPU ids of the
    training towers; sets ``nr_tower``) and ``predict_tower`` (list of GPU ids for
    ``legacy_get_predictor(..., tower=k)``; -1 is the CPU). They describe what a multi-GPU trainer
    should do; the current API passes the devices to the trainer instead, so the config only checks
    that they agree with the trainer it is launched with. ``session_config``/``session_creator``
    (TF1's) are refused, naming :class:`~trainstack.towers.RuntimeConfig` (``runtime=``)."""

    def __init__(self, *args: Any, nr_tower: int | None = None, tower: Any = None, predict_tower: Any = None,
                 session_config: Any = None, session_creator: Any = None, **kwargs: Any) -> None:
        reject_session_args(session_config=session_config, session_creator=session_creator)
        super().__init__(*args, **kwargs)
        self.towers_given = nr_tower is not None or tower is not None
        if tower is not None:
            if nr_tower not in (None, 1) and nr_tower != len(tower):
                raise ValueError(f"TrainConfig: nr_tower={nr_tower} disagrees with tower={tower!r}; "
                                 "pass one of them (tower= lists the GPU ids, nr_tower=N means GPUs 0..N-1)")
            self.tower = _check_gpu_ids("tower", tower, allow_cpu=False)
        else:
            n = 1 if nr_tower is None else check_int("TrainConfig", "nr_tower", nr_tower, minimum=0)
            if n < 1:
                raise ValueError(f"TrainConfig(nr_tower={nr_tower}): needs at least one tower")
            self.tower = list(range(n))
        if predict_tower is None:
            predict_tower = [0]
        elif isinstance(predict_tower, numbers.Integral):
            predict_tower = [predict_tower]
        self.predict_tower = _check_gpu_ids("predict_tower", predict_tower, allow_cpu=True)

    @property
    def nr_tower(self) -> int:
        """Number of training towers (``len(self.tower)``)."""
        return len(self.tower)

    def _check_trainer(self, trainer: Any, who: str) -> None:
        check_tower_count(self, trainer, who)


class AutoResumeTrainConfig(core.AutoResumeTrainConfig, TrainConfig):
    """tensorpack's AutoResumeTrainConfig: the core's :class:`~trainstack.towers.AutoResumeTrainConfig`
    over this layer's :class:`TrainConfig` (it takes the older form's arguments too)."""

    @classmethod
    def get_sessinit_resume(cls, dir: str | None = None) -> CheckpointInit | None:  # noqa: A002
        """tensorpack's helper: a CheckpointInit of the latest checkpoint in ``dir`` (default: the
        logger directory; see ``find_checkpoint``), or None. It resumes the run that wrote it: a
        variable it lacks is a ResumeError (see ``CheckpointInit(resume=True)``)."""
        checkpoint = cls.find_checkpoint(dir)
        return None if checkpoint is None else CheckpointInit(checkpoint, resume=True)


def towers_of(config: core.TrainConfig) -> list[int]:
    """The training towers of the older form (``config.tower``; ``[0]`` for the core's TrainConfig)."""
    return list(config.tower) if isinstance(config, TrainConfig) else [0]


def predict_towers_of(config: Any) -> list[int]:
    """The prediction towers of the older form (``config.predict_tower``; ``[0]`` for any other config)."""
    return list(config.predict_tower) if isinstance(config, TrainConfig) else [0]


def check_tower_count(config: core.TrainConfig, trainer: Any, who: str) -> None:
    """The older form's ``TrainConfig(nr_tower=, tower=)`` must agree with the towers ``trainer``
    trains (``trainer.num_towers``): else a ValueError from ``who``, naming the multi-GPU trainer
    to use. The devices are the trainer's choice now; the config only says how many it expects."""
    if not isinstance(config, TrainConfig) or not config.towers_given:
        return
    count = trainer.num_towers
    if config.nr_tower != count:
        raise ValueError(
            f"{who}: the TrainConfig asks for {config.nr_tower} training towers (tower={config.tower}) but "
            f"{type(trainer).__name__} trains {count}. The devices are the trainer's choice now: pass them "
            f"to a multi-GPU trainer, e.g. launch_train_with_config(config, SyncMultiGPUTrainerReplicated("
            f"{config.tower})) (or SyncMultiGPUTrainerParameterServer, AsyncMultiGPUTrainer), and leave "
            "nr_tower/tower out of the TrainConfig")


def runtime_config_from_proto(config: Any) -> RuntimeConfig:
    """The RuntimeConfig closest to a session's ``ConfigProto`` (TensorFlow's own proto, which it
    still exports under ``tf.compat.v1``; see the module docstring).

    Fields with no equivalent (e.g. ``per_process_gpu_memory_fraction``) are dropped.
    """
    if not isinstance(config, tf.compat.v1.ConfigProto):  # TensorFlow's own proto class
        raise TypeError(f"runtime_config_from_proto takes a tf.compat.v1.ConfigProto, got {type(config).__name__}")
    jit = config.graph_options.optimizer_options.global_jit_level
    levels = tf.compat.v1.OptimizerOptions  # TensorFlow's own proto: the JIT levels' values
    visible = config.gpu_options.visible_device_list
    cpus = config.device_count.get("CPU", 1)
    return RuntimeConfig(
        intra_op_threads=config.intra_op_parallelism_threads or None,
        inter_op_threads=config.inter_op_parallelism_threads or None,
        soft_placement=config.allow_soft_placement,
        gpu_memory_growth=config.gpu_options.allow_growth,
        xla=None if jit == levels.DEFAULT else jit != levels.OFF,
        logical_cpu_devices=cpus if cpus > 1 else None,
        visible_gpus=tuple(int(i) for i in visible.split(",")) if visible else None)


def reject_session_args(**kwargs: Any) -> None:
    """Raise TypeError when TF1's ``session_config`` or ``session_creator`` is given (not None).

    The error names :class:`~trainstack.towers.RuntimeConfig` and how the TF1 settings map onto
    it. Other keyword arguments are not checked here.
    """
    config = kwargs.get("session_config")
    if config is not None:
        try:
            suggestion = f" For this ConfigProto that is {runtime_config_from_proto(config)!r}."
        except TypeError:
            suggestion = ""
        raise TypeError(
            "session_config= is a TF1 argument: TensorFlow 2 has no session to configure. Call "
            "trainstack.towers.RuntimeConfig(...).apply() at the start of the program instead; "
            "ConfigProto fields map to its arguments: intra_op_parallelism_threads -> intra_op_threads, "
            "inter_op_parallelism_threads -> inter_op_threads, allow_soft_placement -> soft_placement, "
            "gpu_options.allow_growth -> gpu_memory_growth, gpu_options.visible_device_list -> "
            "visible_gpus, graph_options.optimizer_options.global_jit_level -> xla, "
            f"device_count['CPU'] -> logical_cpu_devices.{suggestion} "
            "(runtime_config_from_proto(config) converts one.)")
    if kwargs.get("session_creator") is not None:
        raise TypeError(
            "session_creator= is a TF1 argument: TensorFlow 2 creates no session. Runtime settings "
            "(threads, soft placement, GPU memory growth, XLA, devices) go to "
            "trainstack.towers.RuntimeConfig(...).apply() at the start of the program; initial "
            "variable values go to session_init= (SmartInit: a checkpoint, a dict of arrays, ...)")


def _check_gpu_ids(what: str, ids: Any, allow_cpu: bool) -> list[int]:
    low = -1 if allow_cpu else 0
    if not isinstance(ids, (list, tuple)) or not ids or not all(is_int(i, minimum=low) for i in ids):
        cpu = " (-1 for the CPU)" if allow_cpu else ""
        raise ValueError(f"TrainConfig({what}=) must be a non-empty list of GPU ids{cpu}, got {ids!r}")
    if len(set(ids)) != len(ids):
        raise ValueError(f"TrainConfig({what}={list(ids)!r}) has duplicate ids")
    return [int(i) for i in ids]
