"""tensorpack 0.11's ``tensorpack.tfutils.scope_utils``: name-scope decorators
(``auto_reuse_variable_scope``: ``trainstack.tensorpack.tf1``'s)."""
from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import tensorflow as tf

from trainstack.callbacks import logger
from trainstack.tensorpack.tf1 import auto_reuse_variable_scope

from .._replaced import unprovided
from ..utils.argtools import graph_memoized

__all__ = ["auto_reuse_variable_scope", "cached_name_scope", "under_name_scope"]


@graph_memoized
def _get_cached_ns(name: str) -> str:
    with tf.compat.v1.name_scope(None), tf.compat.v1.name_scope(name) as scope:
        return str(scope)


@contextmanager
def cached_name_scope(name: str, top_level: bool = True) -> Iterator[str]:
    """A name scope opened once per graph and re-entered on later calls (``top_level``: not nested under
    the caller's scope); yields the scope, ``"name/"``."""
    if not top_level:
        current = tf.compat.v1.get_default_graph().get_name_scope()
        if current:
            name = current + "/" + name
    ns = _get_cached_ns(name)
    with tf.compat.v1.name_scope(ns):
        yield ns


def under_name_scope(name_scope: str | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A decorator running the function under a name scope: the call's ``name_scope=`` keyword (re-entered
    if it exists), else ``name_scope``, else the function's name."""
    def _impl(func: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            given = "name_scope" in kwargs
            scopename = kwargs.pop("name_scope", name_scope) or func.__name__
            if given:
                with cached_name_scope(scopename, top_level=False) as scope:
                    scope = scope.strip("/")
                    if not scope.endswith(scopename):
                        logger.warn(f"Calling function {func.__name__} with name_scope='{scopename}', but actual "
                                    f"name scope becomes '{scope.split('/')[-1]}'. The name '{scopename}' "
                                    "might be taken.")
                    return func(*args, **kwargs)
            with tf.name_scope(scopename):
                return func(*args, **kwargs)
        return wrapper
    return _impl


__getattr__ = unprovided(__name__)
