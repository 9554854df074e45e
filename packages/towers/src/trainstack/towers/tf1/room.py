"""The room as the core sees it: :func:`emulation`, and the object :func:`register` plugs in.

:func:`emulation` is the single switch: every patch of the room's concept
modules (variables, summaries, optimizers, graph collections), engaged for this thread only while
a tower is traced or a tensorpack-style trainer is constructed (see
:mod:`.switch`). :func:`register` makes the core call the room at its extension
points (:mod:`trainstack.towers.tower.extension` and the older API's
:mod:`trainstack.towers.trainers.legacy_hook`).
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextlib import AbstractContextManager as ContextManager
from typing import Any

from trainstack.loop import Callback

from ..tower import extension
from . import aliases, graph_collections, optimizers, recording, step_counter, summaries, train_optimizers, variables
from .legacy import dispatch as legacy_dispatch
from .switch import Frame, engaged

__all__ = ["emulation", "TF1Room", "register"]

#: every replacement the room makes in TensorFlow and Keras
PATCHES = [*variables.PATCHES, *summaries.PATCHES, *optimizers.PATCHES, *graph_collections.PATCHES,
           *aliases.PATCHES, *recording.PATCHES]


def emulation(tower: Any = None, tower_func: Any = None) -> ContextManager[Frame]:
    """Inside: this thread's TF1 calls mean what they meant in tensorpack, for the tower
    ``tower`` (a TowerContext) built by ``tower_func``; with neither, for a trainer's ``__init__``
    (``opt.minimize`` exists, TF1 calls outside a tower are TensorFlow's own)."""
    return engaged(PATCHES, Frame(tower, tower_func))


class TF1Room:
    """:class:`~trainstack.towers.tower.extension.TF1World`: what the core asks of the room."""

    def tracing(self, tower_func: Any, ctx: Any) -> ContextManager[Frame]:
        return emulation(ctx, tower_func)

    @contextlib.contextmanager
    def constructing(self, trainer: Any) -> Iterator[None]:
        with emulation(), recording.constructing(trainer):
            yield

    def eager_tower(self, ctx: Any) -> ContextManager[None] | None:
        return recording.eager_tower(ctx)

    def implicit_callbacks(self, trainer: Any) -> list[Callback]:
        mirror = step_counter.step_mirror(trainer)
        return [] if mirror is None else [mirror]

    def in_graph_step_done(self) -> None:
        step_counter.advance_in_graph()

    def adapt_optimizer(self, optimizer: Any) -> Any | None:
        return train_optimizers.keras_optimizer_for(optimizer)


def register() -> None:
    """Plug the room into the core (``trainstack.towers`` does it when imported)."""
    extension.register(TF1Room())
    legacy_dispatch.register()
