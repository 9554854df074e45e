"""How a trainer is constructed: its metaclass, its summary collection, no TrainConfig.

``Trainer(...)`` runs the whole ``__init__`` (its subclasses' included) inside the trainer's
:meth:`~trainstack.towers.TowerTrainer._constructing` hook. The metaclass :class:`Constructed`
does it, declared on :class:`~trainstack.towers.TowerTrainer`: no ``__init__`` is rewritten, and
a subclass's ``__init__`` is called as it is written. The default hook makes the trainer's summary
collection record, so the steps a custom trainer builds in ``__init__`` report to its callbacks.
"""
from __future__ import annotations

import contextlib
from contextlib import AbstractContextManager as ContextManager
from typing import Any

from trainstack.callbacks import SummaryCollection, summary_collection_chosen, summary_collection_scope

__all__ = ["Constructed", "own_collection", "own_summaries", "is_train_config", "refuse_config"]


class Constructed(type):
    """Metaclass: ``cls(*args, **kwargs)`` makes the instance, then runs its ``__init__`` inside
    ``instance._constructing()`` (entered once, however many ``super().__init__`` calls)."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        klass: Any = cls
        obj = klass.__new__(klass) if klass.__new__ is object.__new__ else klass.__new__(klass, *args, **kwargs)
        if isinstance(obj, cls):
            with obj._constructing():
                obj.__init__(*args, **kwargs)
        return obj


def own_collection(trainer: Any) -> SummaryCollection:
    """The trainer's summary collection, made on first use."""
    collection = trainer.__dict__.get("summary_collection")
    if collection is None:
        collection = trainer.__dict__["summary_collection"] = SummaryCollection(type(trainer).__name__)
    return collection


def own_summaries(trainer: Any) -> ContextManager[Any]:
    """The trainer's collection recording, unless a scope already chose one."""
    if summary_collection_chosen():
        return contextlib.nullcontext()
    return summary_collection_scope(own_collection(trainer))


def is_train_config(obj: Any) -> bool:
    """Whether ``obj`` is a TrainConfig (known by its interface: run/ builds on the trainers)."""
    return all(hasattr(obj, name) for name in ("model", "callbacks", "max_epoch", "steps_per_epoch"))


def refuse_config(trainer: Any, config: Any) -> None:
    """The core trainers take no TrainConfig (tensorpack 003's ``Trainer(config)``): a TypeError
    naming the current form and the layer that keeps the older one."""
    if config is None:
        return
    name = type(trainer).__name__
    if is_train_config(config):
        raise TypeError(
            f"{name}(config) is tensorpack 003's trainer API, which trainstack's core does not take: use "
            f"launch_train_with_config(config, {name}()), or the trainers of trainstack.tensorpack "
            f"(from trainstack.tensorpack import {name}), which keep {name}(config).train()")
    raise TypeError(f"{name}() got an unexpected positional argument {config!r:.80}")

