"""The core's one extension point for tensorpack's TF1 world (the room, :mod:`trainstack.towers.tf1`).

The core (towers, trainers, predictors) is plain TensorFlow 2. tensorpack's
scripts need more at six moments, and the room provides it:

- each build (trace) of a tower: :meth:`TF1World.tracing`, where TF1 calls
  (``tf.compat.v1.get_variable``, ``tf.summary.*``, ...) get their TF1 meaning
  or a clear error;
- the ``__init__`` of a trainer that builds its graph tensorpack's way
  (:attr:`TowerTrainer.records_graph_build`): :meth:`TF1World.constructing`;
- a :class:`TowerContext` entered outside any traced function while such a
  trainer is constructed: :meth:`TF1World.eager_tower` records the tower;
- the callbacks a trainer adds after the user's: :meth:`TF1World.implicit_callbacks`
  (the variable ``get_global_step_var()`` reads, kept equal to the loop's step);
- a step finished inside the graph loop of a call that makes several steps
  (``steps_per_run > 1``): :meth:`TF1World.in_graph_step_done` (that variable advances
  with each step of the loop, as tensorpack's step variable did with each step);
- an optimizer of TF1's API (``tf.compat.v1.train.AdamOptimizer``) where the core first sees
  an optimizer (``check_optimizer``, ``unwrap_optimizer``): :meth:`TF1World.adapt_optimizer`
  gives the Keras optimizer that stands for it.

The room sits above the core, so the core cannot import it: the room registers
itself here with :func:`register` (``trainstack.towers``' ``__init__`` does it,
so any use of the towers layer has it). With nothing registered the core runs as
plain TensorFlow 2: no emulation, eager towers run eagerly.
"""
from __future__ import annotations

import contextlib
from contextlib import AbstractContextManager as ContextManager
from typing import Any, Protocol

__all__ = ["TF1World", "register", "registered", "tracing", "constructing", "eager_tower", "implicit_callbacks",
           "in_graph_step_done", "adapt_optimizer"]


class TF1World(Protocol):
    """What the core asks of the TF1 room."""

    def tracing(self, tower_func: Any, ctx: Any) -> ContextManager[Any]:
        """Entered around each build of a tower by ``tower_func`` under ``ctx``."""

    def constructing(self, trainer: Any) -> ContextManager[None]:
        """Entered around the ``__init__`` of a trainer that records its graph build."""

    def eager_tower(self, ctx: Any) -> ContextManager[None] | None:
        """For a TowerContext entered eagerly: an entered context that records the tower (exited
        with the TowerContext), or None to run it eagerly."""

    def implicit_callbacks(self, trainer: Any) -> list[Any]:
        """Callbacks a trainer adds after the user's, to keep the room's state in step with the
        loop (the variable ``get_global_step_var()`` reads)."""

    def in_graph_step_done(self) -> None:
        """Called while a multi-step call is traced, after each step of its graph loop (not after
        the call's last step, which the loop's callbacks follow): graph ops that advance the
        room's state by one step."""

    def adapt_optimizer(self, optimizer: Any) -> Any | None:
        """The Keras optimizer that stands for ``optimizer``, an optimizer of TF1's API (the same
        object for the same ``optimizer``); None if it is not one. Raises TypeError for a TF1
        optimizer the room cannot stand in for."""


_world: TF1World | None = None


def register(world: TF1World | None) -> None:
    """Make ``world`` the TF1 room the core calls (None: plain TensorFlow 2)."""
    global _world  # noqa: PLW0603 - one room per process
    _world = world


def registered() -> TF1World | None:
    """The registered room, or None."""
    return _world


def tracing(tower_func: Any, ctx: Any) -> ContextManager[Any]:
    return contextlib.nullcontext() if _world is None else _world.tracing(tower_func, ctx)


def constructing(trainer: Any) -> ContextManager[None]:
    return contextlib.nullcontext() if _world is None else _world.constructing(trainer)


def eager_tower(ctx: Any) -> ContextManager[None] | None:
    return None if _world is None else _world.eager_tower(ctx)


def implicit_callbacks(trainer: Any) -> list[Any]:
    return [] if _world is None else _world.implicit_callbacks(trainer)


def in_graph_step_done() -> None:
    if _world is not None:
        _world.in_graph_step_done()


def adapt_optimizer(optimizer: Any) -> Any | None:
    return None if _world is None else _world.adapt_optimizer(optimizer)
