"""launch_train_with_config: train a TrainConfig's model with a trainer, in one call.

It does three things, which you can do yourself for more control::

    input = apply_default_prefetch(config.data or config.dataflow, trainer)
    trainer.setup_graph(model.get_input_signature(), input, model.build_graph, model.get_optimizer)
    trainer.train_with_defaults(callbacks=config.callbacks, ..., max_epoch=config.max_epoch,
                                handle_signals=config.handle_signals, on_nonfinite=config.on_nonfinite)

preceded by ``config.runtime.apply()`` when the config has a RuntimeConfig.
"""
from __future__ import annotations

import logging
from typing import Any

from trainstack.inputs import InputSource, QueueInput

from ..tower.eager import check_eager_execution
from ..tower.model_desc import ModelDesc
from ..trainers.single_cost import SingleCostTrainer
from .config import TrainConfig

__all__ = ["launch_train_with_config", "apply_default_prefetch"]

logger = logging.getLogger("trainstack.towers")


def apply_default_prefetch(input_or_dataflow: Any, trainer: Any) -> InputSource:
    """Make an InputSource for ``trainer`` with tensorpack's prefetch rules.

    - An InputSource is used as it is.
    - A dataflow becomes what the trainer declares, ``trainer.default_input(dataflow)``:
      ``FeedInput(dataflow)`` for a :class:`SimpleTrainer` and its subclasses (unless it has
      ``steps_per_run`` above 1, which a feed cannot serve), ``QueueInput(dataflow)`` for the
      other trainers, so that a background thread prepares the next batches while the step
      runs.
    - For a trainer with several devices (``trainer.devices``, the multi-GPU trainers), a
      QueueInput is wrapped in ``StagingInput``, which copies the next batch onto each device
      while the current step runs, unless ``trainer.gpu_prefetch`` is False (the older
      constructors' ``gpu_prefetch=False``).
    """
    if isinstance(input_or_dataflow, InputSource):
        source = input_or_dataflow
    else:
        source = trainer.default_input(input_or_dataflow)
        if isinstance(source, QueueInput):
            logger.info("Automatically applying QueueInput on the dataflow.")
    devices = getattr(trainer, "devices", None)
    if (devices is not None and len(devices) > 1 and isinstance(source, QueueInput)
            and getattr(trainer, "gpu_prefetch", True)):
        from trainstack.inputs import StagingInput  # noqa: PLC0415 - only multi-device trainers need it

        logger.info("Automatically applying StagingInput on the QueueInput.")
        source = StagingInput(source)
    return source


def launch_train_with_config(config: TrainConfig, trainer: SingleCostTrainer) -> None:
    """Train ``config.model`` on ``config``'s input with ``trainer`` (a SingleCostTrainer).

    Example::

        launch_train_with_config(config, SimpleTrainer())
    """
    check_eager_execution("launch_train_with_config()")
    if not isinstance(config, TrainConfig):
        raise TypeError(f"launch_train_with_config expects a TrainConfig, got {config!r:.80} "
                        f"({type(config).__name__})")
    if not isinstance(trainer, SingleCostTrainer):
        raise TypeError(f"launch_train_with_config needs a SingleCostTrainer (SimpleTrainer, a "
                        f"multi-GPU trainer, ...), got {type(trainer).__name__}; other trainers are "
                        "set up and trained with their own methods")
    model = config.model
    if not isinstance(model, ModelDesc):
        raise TypeError(f"launch_train_with_config needs TrainConfig(model=) to be a ModelDesc (with "
                        f"build_graph returning the cost and optimizer()), got {type(model).__name__}")
    if config.runtime is not None:
        config.runtime.apply()
    config._check_trainer(trainer, f"launch_train_with_config(config, {type(trainer).__name__}())")
    source = apply_default_prefetch(config.data if config.data is not None else config.dataflow,
                                    trainer)
    trainer.setup_graph(model.get_input_signature(), source, model.build_graph, model.get_optimizer)
    if config.steps_per_epoch_is_default:
        trainer.announce_default_epoch(config.steps_per_epoch)
    trainer.train_with_defaults(
        callbacks=config.callbacks, monitors=config.monitors, extra_callbacks=config.extra_callbacks,
        session_init=config.session_init, steps_per_epoch=config.steps_per_epoch,
        starting_epoch=config.starting_epoch, max_epoch=config.max_epoch,
        handle_signals=config.handle_signals, on_nonfinite=config.on_nonfinite)

