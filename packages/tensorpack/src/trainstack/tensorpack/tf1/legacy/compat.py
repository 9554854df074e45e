"""The older trainer API (tensorpack's 003 documents), kept for porting; deprecated.

There a trainer was built from a TrainConfig and trained by ``train()``::

    SimpleTrainer(config).train()                  # older form
    launch_train_with_config(config, SimpleTrainer())   # current form, the same run

The older form is a thin layer over the current one: ``TowerTrainer(config)``
calls :func:`bind_legacy_config`, which checks the config and keeps it as
``trainer.config``; ``trainer.train()`` with no arguments then calls
:func:`train_legacy`, which is ``launch_train_with_config(trainer.config, trainer)``.
A dataflow is therefore fed with ``FeedInput`` to a plain SimpleTrainer (as the
older SimpleTrainer did) and through ``QueueInput`` to the other trainers.

Classes of the older API:

- ``FeedfreeTrainerBase(config)``, ``SingleCostFeedfreeTrainer(config)``,
  ``SimpleFeedfreeTrainer(config)``: a SimpleTrainer whose ``config.data`` must
  be a FeedfreeInput (QueueInput, TFDatasetInput, ...), as the older feedfree
  trainers required. The current trainers need no such distinction.
- ``QueueInputTrainer(config, input_queue=None)`` lives in ``tf1/trainers.py`` and binds the
  config through here. ``input_queue`` was a ``tf.QueueBase``; QueueInput makes its own
  queue, so it is now the queue's capacity (an int), used for a ``config.dataflow``.
- ``TrainConfig(nr_tower=, tower=, predict_tower=)`` (:mod:`.config`): the training towers must
  agree with the trainer's devices; several towers need the multi-GPU trainers.
  ``predict_tower[k]`` is the device of :func:`legacy_get_predictor`'s ``tower=k``.

Each use warns with a DeprecationWarning (shown once per call site by Python's
warning filters) naming the current form, and is logged once per process.
"""
from __future__ import annotations

import importlib
import logging
import os
import sys
import types
import warnings
from collections.abc import Sequence
from typing import Any

from trainstack.loop.checks import check_int
from trainstack.towers import TrainConfig, launch_train_with_config
from trainstack.towers.predict.predictor import OnlinePredictor

from .config import check_tower_count, predict_towers_of, towers_of

__all__ = ["bind_legacy_config", "train_legacy", "legacy_get_predictor", "MULTI_GPU_TRAINERS"]

logger = logging.getLogger("trainstack.tensorpack")

#: The trainers that train several towers (issue 6 of the project).
MULTI_GPU_TRAINERS = ("SyncMultiGPUTrainerReplicated", "SyncMultiGPUTrainerParameterServer",
                      "AsyncMultiGPUTrainer")

#: trainstack.tensorpack's and trainstack.towers' folders: warnings name the first frame outside
#: them (the user's)
_PACKAGE_DIRS = (os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                 os.path.dirname(os.path.abspath(importlib.import_module("trainstack.towers").__file__ or "")))
_logged: set[str] = set()


def bind_legacy_config(trainer: Any, config: TrainConfig) -> None:
    """Attach ``config`` to ``trainer`` for the older ``trainer.train()``; warn that it is deprecated.

    Checks the config now (a TrainConfig with a model, towers the trainer can train), so that
    a mistake fails where the trainer is built.
    """
    name = type(trainer).__name__
    if not isinstance(config, TrainConfig):
        raise TypeError(f"{name}(config): config must be a TrainConfig, got {config!r:.80} "
                        f"({type(config).__name__}). The current form takes no config: "
                        f"launch_train_with_config(TrainConfig(...), {name}())")
    if config.model is None:
        raise ValueError(f"{name}(config): the TrainConfig has no model; pass TrainConfig(model=...)")
    _check_legacy_towers(trainer, config)
    warn_deprecated(f"{name}(config)",
                    f"launch_train_with_config(config, {_current_trainer_call(trainer, config)})")
    trainer.config = config


def train_legacy(trainer: Any) -> None:
    """The older ``trainer.train()``: train with the config bound by :func:`bind_legacy_config`."""
    config = getattr(trainer, "config", None)
    if not isinstance(config, TrainConfig):
        raise RuntimeError(f"{type(trainer).__name__}.train() without arguments is the older form and "
                           f"needs a trainer built as {type(trainer).__name__}(config); otherwise use "
                           "launch_train_with_config(config, trainer) or "
                           "trainer.train_with_defaults(...)")
    launch_train_with_config(config, trainer)


def legacy_get_predictor(trainer: Any, input_names: Sequence[str], output_names: Sequence[str],
                         tower: int = 0) -> Any:
    """The older ``trainer.get_predictor(input_names, output_names, tower=k)``.

    ``tower`` indexes ``config.predict_tower`` (GPU ids, -1 for the CPU): the predictor is
    ``trainer.get_predictor(input_names, output_names, device=predict_tower[tower])``, or for
    -1 an inference tower ``predict_tower_cpu`` placed on the CPU.
    """
    predict_tower = predict_towers_of(getattr(trainer, "config", None))
    tower = check_int("legacy_get_predictor", "tower", tower, minimum=0,
                      note=f"an index into config.predict_tower, {predict_tower}")
    if tower >= len(predict_tower):
        raise IndexError(f"tower={tower!r} is not a prediction tower: config.predict_tower is "
                         f"{predict_tower}")
    device = predict_tower[tower]
    if device == -1:
        return OnlinePredictor(trainer.tower_func, input_names, output_names,
                               tower_name="predict_tower_cpu", device="/device:CPU:0")
    return trainer.get_predictor(input_names, output_names, device=device)


# -- helpers -----------------------------------------------------------------------------------
def warn_deprecated(old: str, new: str) -> None:
    """DeprecationWarning at the user's line (outside this package); logged once per ``old``."""
    message = f"{old} is the older trainer API (tensorpack 003) and is deprecated; use {new} instead"
    warnings.warn(message, DeprecationWarning, stacklevel=_user_stacklevel())
    if old not in _logged:
        _logged.add(old)
        logger.warning(message)


def _user_stacklevel() -> int:
    """warnings.warn's stacklevel, in warn_deprecated, of the first frame outside trainstack.tensorpack and trainstack.towers."""
    frame: types.FrameType | None
    frame, level = sys._getframe(1), 1  # noqa: SLF001 - only to attribute the warning to the user
    inside = tuple(d + os.sep for d in _PACKAGE_DIRS)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(inside):
        frame, level = frame.f_back, level + 1
    return level


def _current_trainer_call(trainer: Any, config: TrainConfig) -> str:
    """The current trainer to use instead of ``trainer``'s older class; a multi-GPU trainer
    takes the config's towers (``trainer.devices`` marks one)."""
    if getattr(trainer, "older_feedfree", False):
        return "SimpleTrainer()"
    gpus = towers_of(config) if getattr(trainer, "devices", None) is not None else ""
    return f"{type(trainer).__name__}({gpus})"


def _check_legacy_towers(trainer: Any, config: TrainConfig) -> None:
    check_tower_count(config, trainer, f"{type(trainer).__name__}(config)")
