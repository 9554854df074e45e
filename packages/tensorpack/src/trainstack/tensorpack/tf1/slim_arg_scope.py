"""TF-slim's ``arg_scope``: default arguments for the functions decorated with ``add_arg_scope``.

``tfv1.contrib.slim.arg_scope`` (and ``tf.contrib.framework``'s), as TF1 had it, for the slim functions
of the room (``conv2d``, ``fully_connected``, the pools, ``flatten``, ``batch_norm``, resnet's units):

- ``with arg_scope([slim.conv2d, slim.batch_norm], k=v):`` gives each listed function the default
  ``k=v``; a call's own keyword arguments win; scopes nest, an inner one adding to (and overriding)
  the outer one's arguments for the same function;
- ``with arg_scope(...) as sc:`` yields the scope, a dict from each function's key to its arguments;
  ``with arg_scope(sc):`` re-enters it (no keyword arguments then), as ``resnet_arg_scope()`` is used;
- a function not decorated with ``add_arg_scope`` in the list is TF1's ValueError.

The stack of scopes is the thread's own (TF1's was one per process; a trace is one thread).
"""
from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["arg_scope", "add_arg_scope", "has_arg_scope", "arg_scoped_arguments", "current_arg_scope"]

_local = threading.local()


def _stack() -> list[dict]:
    if not hasattr(_local, "stack"):
        _local.stack = [{}]
    return _local.stack


def current_arg_scope() -> dict:
    """The innermost scope: a dict from each decorated function's key to its default arguments."""
    return _stack()[-1]


def _key(op: Callable) -> tuple[str, str]:
    return getattr(op, "_key_op", (op.__module__, op.__name__))


def has_arg_scope(func: Callable) -> bool:
    """Whether ``func`` was decorated with ``add_arg_scope``."""
    return getattr(func, "_arg_scoped", False)


def arg_scoped_arguments(func: Callable) -> list[str]:
    """The arguments ``func`` (decorated) accepts, which ``arg_scope`` may set."""
    return list(getattr(func, "_arg_names", []))


def add_arg_scope(func: Callable) -> Callable:
    """Decorate ``func`` so that the current ``arg_scope`` gives it its default arguments."""
    import inspect

    key = _key(func)

    @functools.wraps(func)
    def scoped(*args: Any, **kwargs: Any) -> Any:
        defaults = current_arg_scope().get(key)
        if defaults:
            kwargs = {**defaults, **kwargs}
        return func(*args, **kwargs)

    scoped._key_op = key  # type: ignore[attr-defined]
    scoped._arg_scoped = True  # type: ignore[attr-defined]
    scoped._arg_names = list(inspect.signature(func).parameters)  # type: ignore[attr-defined]
    return scoped


@contextlib.contextmanager
def arg_scope(list_ops_or_scope: Any, **kwargs: Any) -> Iterator[dict]:
    """Default ``kwargs`` for each function of ``list_ops_or_scope`` (a list or tuple of decorated
    functions), or re-enter a scope (a dict yielded by an earlier ``arg_scope``)."""
    if isinstance(list_ops_or_scope, dict):
        if kwargs:
            raise ValueError("When attempting to re-use a scope by suppling a dictionary, kwargs must be empty.")
        scope = list_ops_or_scope
    else:
        if not isinstance(list_ops_or_scope, (list, tuple)):
            raise TypeError("list_ops_or_scope must either be a list/tuple or reused scope (i.e. dict)")
        scope = dict(current_arg_scope())
        for op in list_ops_or_scope:
            if not has_arg_scope(op):
                raise ValueError(f"{getattr(op, '__name__', op)} is not decorated with @add_arg_scope")
            key = _key(op)
            scope[key] = {**scope.get(key, {}), **kwargs}
    stack = _stack()
    stack.append(scope)
    try:
        yield scope
    finally:
        stack.pop()
