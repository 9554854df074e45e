"""TowerContext: the tower being built (its name, whether it trains, its index).

Model code reads it with :func:`get_current_tower_context`; see :mod:`trainstack.towers.tower.tower`
for the tower functions that run under it.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager as ContextManager
from typing import TYPE_CHECKING, Any

import tensorflow as tf

from trainstack.loop.checks import check_bool, check_int

if TYPE_CHECKING:
    from .tower import TowerFunc

__all__ = ["TowerContext", "get_current_tower_context"]

_local = threading.local()


class TowerContext:
    """The tower being built: its ``name`` (also its name scope), ``is_training`` and ``index``.

    ``index`` counts the towers of one kind (training tower ``k`` is named
    ``tower<k>`` by the trainers). ``is_main_training_tower`` is true for the
    first training tower, the one whose summaries are kept and whose tensors
    callbacks fetch. Contexts do not nest.

    ``cross_worker_mean`` is how a layer reaches the other worker processes of data-parallel
    training: ``cross_worker_mean(tensors)`` returns each tensor's mean over the workers (same
    shapes, same order; every worker must call it with the same tensors in the same order).
    The trainer that has workers sets it on the training towers it builds (``HorovodTrainer``:
    a Horovod all-reduce; ``BatchNorm(sync_statistics='horovod')`` uses it); None elsewhere.
    It lives as long as the context: nothing global outlives the build.
    """

    def __init__(self, name: str, is_training: bool, index: int = 0, *,
                 cross_worker_mean: Callable[[Sequence[Any]], list[Any]] | None = None) -> None:
        if not isinstance(name, str):
            raise TypeError(f"TowerContext name must be a str, got {name!r}")
        index = check_int("TowerContext", "index", index, minimum=0)
        self.name = name
        self.is_training = check_bool("TowerContext", "is_training", is_training)
        self.index = index
        #: the mean of tensors over the worker processes, or None (see the class docstring)
        self.cross_worker_mean = cross_worker_mean
        #: the name scope the tower's ops live in (set on entry; "" when the name is empty)
        self.ns_name = ""
        self._scope: Any = None
        #: what :meth:`_enter_eagerly` returned (exited with the context), or None
        self._eager: Any = None

    @property
    def is_main_training_tower(self) -> bool:
        return self.is_training and self.index == 0

    def __enter__(self) -> TowerContext:
        current = get_current_tower_context()
        if current is not None:
            raise RuntimeError(f"cannot enter TowerContext({self.name!r}) inside TowerContext("
                               f"{current.name!r}): tower contexts do not nest")
        if tf.executing_eagerly():
            self._eager = self._enter_eagerly()
        if self.name:
            self._scope = tf.name_scope(self.name)
            self._scope.__enter__()
            self.ns_name = tf.get_current_name_scope()
        _local.ctx = self
        return self

    def __exit__(self, *exc: Any) -> None:
        _local.ctx = None
        if self._scope is not None:
            scope, self._scope = self._scope, None
            scope.__exit__(*exc)
        if self._eager is not None:
            entered, self._eager = self._eager, None
            entered.__exit__(*exc)

    def _build_tower(self, tower_func: TowerFunc, inputs: Sequence[Any]) -> Any:
        """Hook: build the tower ``tower_func(*inputs)`` under this context (what calling a
        TowerFunc does). The default builds it now (:meth:`TowerFunc.build`); a subclass whose
        :meth:`_enter_eagerly` records towers instead hands it to its recorder."""
        return tower_func.build(self, inputs)

    def _enter_eagerly(self) -> ContextManager[Any] | None:
        """Hook: called when the context is entered outside any traced function; returns an
        entered context manager, exited with this context, or None. The default returns None:
        the tower runs eagerly (TensorFlow 2). A subclass may build the tower elsewhere instead
        (``trainstack.tensorpack``'s TowerContext records it while a custom trainer is
        constructed, as tensorpack's trainers built their graph in ``__init__``)."""
        return None

    def __repr__(self) -> str:
        return (f"TowerContext({self.name!r}, is_training={self.is_training}, index={self.index})")


def get_current_tower_context() -> TowerContext | None:
    """The TowerContext being built in this thread, or None outside any tower."""
    return getattr(_local, "ctx", None)
