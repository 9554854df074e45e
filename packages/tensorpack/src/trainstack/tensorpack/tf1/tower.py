"""tensorpack's TowerContext and TowerFunc: the core's, with TF1 calls emulated while a tower is built.

- :class:`TowerFunc` enters the room's emulation (:func:`~.room.emulation`) around each build of
  a tower (the core's ``TowerFunc._tracing`` hook): in the tracing thread only, TF1 calls
  (``tf.compat.v1.get_variable``, ``tf.summary.*``, collections, ...) mean what they meant in
  tensorpack; everything is restored when the build returns.
- :class:`TowerContext` entered outside any traced function while a tensorpack-style trainer is
  constructed records the tower (``TowerContext._enter_eagerly``), as tensorpack's custom
  trainers built their graph in ``__init__`` (see :mod:`.recording`); anywhere else it runs
  eagerly, as the core's does.
- :class:`TowerHandle`, what each build records, also resolves a variable's TF1 name as a tensor
  name (``'linearnew/W'``, ``'linearnew/W:0'``, ``'linearnew/W/read'``), as a TF1 graph did.
"""
from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager as ContextManager
from typing import Any

import tensorflow as tf

from trainstack.towers import TowerContext as CoreTowerContext
from trainstack.towers import TowerFunc as CoreTowerFunc
from trainstack.towers import TowerHandle as CoreTowerHandle

from . import recording
from .room import emulation

__all__ = ["TowerContext", "TowerFunc", "TowerHandle"]


class TowerHandle(CoreTowerHandle):
    """The core's :class:`~trainstack.towers.TowerHandle`; a name that names none of the tower's
    tensors may name a variable of its tower function, as in TF1, where variable ``fc/W`` was the
    tensor ``fc/W:0`` and its read ``fc/W/read:0`` (a predictor's ``output_names=['linearnew/W']``,
    as tensorpack's CAM-resnet.py asks): the variable's value, read where it is asked for."""

    def get_tensor(self, name: str) -> tf.Tensor:
        try:
            return super().get_tensor(name)
        except KeyError:
            variable = self._variable(name)
            if variable is None:
                raise
            return tf.identity(variable)

    def _variable(self, name: str) -> tf.Variable | None:
        op_name = name[:-2] if name.endswith(":0") else name
        op_name = op_name[:-len("/read")] if op_name.endswith("/read") else op_name
        variables = self.tower_func.variables if self.tower_func is not None else []
        return next((v for v in variables if v.name == f"{op_name}:0"), None)


class TowerFunc(CoreTowerFunc):
    """The core's :class:`~trainstack.towers.TowerFunc`, building each tower inside the TF1 room."""

    handle_class = TowerHandle

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
