"""tensorpack 0.11's ``tensorpack.utils.argtools``: decorators and argument helpers
(``memoized``, ``memoized_method``: ``trainstack.loop``'s)."""
from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from trainstack.callbacks import logger
from trainstack.loop import memoized, memoized_method

from .._replaced import unprovided

__all__ = ["map_arg", "memoized", "memoized_method", "graph_memoized", "shape2d", "shape4d",
           "memoized_ignoreargs", "log_once"]


def map_arg(**maps: Callable[[Any], Any]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A decorator applying ``maps[name]`` to the argument ``name`` before each call."""
    def deco(func: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            argmap = inspect.signature(func).bind_partial(*args, **kwargs).arguments
            for k, map_func in maps.items():
                if k in argmap:
                    argmap[k] = map_func(argmap[k])
            return func(**argmap)
        return wrapper
    return deco


def graph_memoized(func: Callable[..., Any]) -> Callable[..., Any]:
    """Like :func:`memoized`, with one cache per TensorFlow default graph (``tf.compat.v1.get_default_graph()``:
    eager code shares one graph; each ``tf.function`` trace and ``tf.Graph().as_default()`` block has its own)."""
    cache: dict[Any, Any] = {}

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        import tensorflow as tf  # noqa: PLC0415 - this module imports without TensorFlow

        key = (tf.compat.v1.get_default_graph(), args, tuple(sorted(kwargs.items())))
        if key not in cache:
            cache[key] = func(*args, **kwargs)
        return cache[key]
    return wrapper


_MEMOIZED_NOARGS: dict[Callable[..., Any], Any] = {}


def memoized_ignoreargs(func: Callable[..., Any]) -> Callable[..., Any]:
    """A decorator: the first call's result is returned by every later call, whatever its arguments."""
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if func not in _MEMOIZED_NOARGS:
            _MEMOIZED_NOARGS[func] = func(*args, **kwargs)
        return _MEMOIZED_NOARGS[func]
    return wrapper


def shape2d(a: Any) -> list[Any]:
    """``[a, a]`` for an int, ``list(a)`` for a list or tuple of 2."""
    if type(a) is int:
        return [a, a]
    if isinstance(a, list | tuple):
        if len(a) != 2:
            raise AssertionError(f"shape2d() takes an int or 2 values, got {a!r}")
        return list(a)
    raise RuntimeError(f"Illegal shape: {a}")


def _data_format(data_format: str) -> str:
    names = {"channels_first": "NCHW", "channels_last": "NHWC"}
    ret = names.get(data_format, data_format)
    if ret not in names.values():
        raise ValueError(f"Unknown data_format: {data_format}")
    return ret


def shape4d(a: Any, data_format: str = "NHWC") -> list[Any]:
    """A 4D shape for 4D ops: ``[1, a, a, 1]`` (NHWC) or ``[1, 1, a, a]`` (NCHW) for an int ``a``."""
    s2d = shape2d(a)
    if _data_format(data_format) == "NHWC":
        return [1, *s2d, 1]
    return [1, 1, *s2d]


@memoized
def log_once(message: str, func: str = "info") -> None:
    """Log ``message`` with ``logger.<func>`` the first time only."""
    getattr(logger, func)(message)


__getattr__ = unprovided(__name__)
