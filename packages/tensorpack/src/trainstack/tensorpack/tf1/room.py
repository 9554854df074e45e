"""The room as the tensorpack layer's classes use it: :func:`emulation`.

:func:`emulation` is the single switch: every patch of the room's concept
modules (variables, summaries, optimizers, graph collections, Keras's learning phase, gradient overrides), engaged for this thread only while
a tower is traced or a tensorpack-style trainer is constructed (see :mod:`.switch`). The
classes of :mod:`.classes` enter it from the hooks the core declares.
"""
from __future__ import annotations

from contextlib import AbstractContextManager as ContextManager
from typing import Any

from . import (
    aliases,
    gradient_overrides,
    graph_collections,
    keras_phase,
    optimizers,
    recorded_ops,
    summaries,
    variables,
)
from .switch import Frame, engaged

__all__ = ["emulation", "PATCHES"]

#: every replacement the room makes in TensorFlow and Keras
PATCHES = [*variables.PATCHES, *summaries.PATCHES, *optimizers.PATCHES, *graph_collections.PATCHES,
           *aliases.PATCHES, *recorded_ops.PATCHES, *keras_phase.PATCHES, *gradient_overrides.PATCHES]


def emulation(tower: Any = None, tower_func: Any = None) -> ContextManager[Frame]:
    """Inside: this thread's TF1 calls mean what they meant in tensorpack, for the tower
    ``tower`` (a TowerContext) built by ``tower_func``; with neither, for a trainer's ``__init__``
    (``opt.minimize`` exists, TF1 calls outside a tower are TensorFlow's own)."""
    return engaged(PATCHES, Frame(tower, tower_func))
