"""tensorpack's ModelDescBase and ModelDesc: the core's, building their towers inside the TF1 room.

Their :attr:`~trainstack.towers.ModelDescBase.tower_func_class` is this layer's
:class:`~.tower.TowerFunc`, so every trainer, predictor (``PredictConfig(model=...)``),
InferenceRunner and export builds the model with TF1 calls emulated, the core's trainers
included. ``optimizer()`` runs inside the room too (``tf.summary.scalar('lr', lr)`` there), and
may return a ``tf.compat.v1.train`` optimizer: :meth:`ModelDesc.get_optimizer` gives its Keras
stand-in (TF1's update rule; see :mod:`.train_optimizers`).
"""
from __future__ import annotations

from typing import Any

from trainstack.towers import ModelDesc as CoreModelDesc
from trainstack.towers import ModelDescBase as CoreModelDescBase
from trainstack.towers.tower.gradproc import check_optimizer

from .room import emulation
from .tower import TowerFunc
from .train_optimizers import adapt_optimizer

__all__ = ["ModelDescBase", "ModelDesc"]


class ModelDescBase(CoreModelDescBase):
    """The core's :class:`~trainstack.towers.ModelDescBase`, whose towers are built in the TF1 room."""

    tower_func_class = TowerFunc


class ModelDesc(ModelDescBase, CoreModelDesc):
    """The core's :class:`~trainstack.towers.ModelDesc`, whose towers and optimizer are built in the
    TF1 room; ``optimizer()`` may return a TF1 optimizer."""

    def get_optimizer(self) -> Any:
        """:meth:`optimizer`, called once inside the room, and returned as it is: a TF1 optimizer
        stays one (its ``minimize`` keeps TF1's signature, ``global_step`` second); the trainers
        train with its Keras stand-in, made here first so that one without a stand-in is an
        error naming this call."""
        if self.__dict__.get("_optimizer_cache") is None:
            what = f"{type(self).__name__}.optimizer()"
            with emulation():
                opt = self.optimizer()
            try:
                adapted = adapt_optimizer(opt)
            except TypeError as e:
                raise TypeError(f"{what}: {e}") from None
            check_optimizer(adapted, what)
            self.__dict__["_optimizer_cache"] = opt
        return self.__dict__["_optimizer_cache"]
