"""tensorpack's TowerContext and TowerFunc: the core's, with TF1 calls emulated while a tower is built.

- :class:`TowerFunc` enters the room's emulation (:func:`~.room.emulation`) around each build of
  a tower (the core's ``TowerFunc._tracing`` hook): in the tracing thread only, TF1 calls
  (``tf.compat.v1.get_variable``, ``tf.summary.*``, collections, ...) mean what they meant in
  tensorpack; everything is restored when the build returns.
- :class:`TowerContext` entered outside any traced function while a tensorpack-style trainer is
  constructed records the tower (``TowerContext._enter_eagerly``), as tensorpack's custom
  trainers built their graph in ``__init__`` (see :mod:`.recording`); anywhere else it runs
  eagerly, as the core's does.
"""
from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager as ContextManager
from typing import Any

from trainstack.towers import TowerContext as CoreTowerContext
from trainstack.towers import TowerFunc as CoreTowerFunc

from . import recording
from .room import emulation

__all__ = ["TowerContext", "TowerFunc"]


class TowerFunc(CoreTowerFunc):
    """The core's :class:`~trainstack.towers.TowerFunc`, building each tower inside the TF1 room."""

    def _tracing(self, ctx: CoreTowerContext) -> ContextManager[Any]:
        return emulation(ctx, self)


class TowerContext(CoreTowerContext):
    """The core's :class:`~trainstack.towers.TowerContext`; entered eagerly while a tensorpack-style
    trainer is constructed, it records the tower instead of running it."""

    def _enter_eagerly(self) -> ContextManager[Any] | None:
        return recording.eager_tower(self)

    def _build_tower(self, tower_func: CoreTowerFunc, inputs: Sequence[Any]) -> Any:
        if self._eager is not None:
            return self._eager.call_tower(tower_func, self, inputs)
        return super()._build_tower(tower_func, inputs)
