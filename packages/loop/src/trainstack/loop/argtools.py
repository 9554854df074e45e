"""tensorpack's caching decorators (``tensorpack.utils.argtools``), in pure Python.

- :func:`memoized`: cache a function's results by its (hashable) arguments, for
  the life of the process.
- :func:`memoized_method`: the same for a method, one cache per instance (the
  instance is not kept alive by the cache of another one).
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

__all__ = ["memoized", "memoized_method"]


def memoized(func: Callable[..., Any]) -> Callable[..., Any]:
    """Cache ``func``'s result for each set of arguments (they must be hashable).

    ``memoized_func.cache_clear()`` empties the cache.
    """
    return functools.lru_cache(maxsize=None)(func)


_CACHE_ATTR = "_MEMOIZED_CACHE"


def memoized_method(func: Callable[..., Any]) -> Callable[..., Any]:
    """Cache a method's result per instance and arguments (they must be hashable).

    The cache lives on the instance (attribute ``_MEMOIZED_CACHE``), so it goes
    away with it; the instance itself need not be hashable.
    """

    @functools.wraps(func)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            cache = self.__dict__[_CACHE_ATTR]
        except KeyError:
            cache = self.__dict__[_CACHE_ATTR] = {}
        except AttributeError:
            raise TypeError(f"memoized_method {func.__qualname__} needs an instance with a __dict__, "
                            f"got {type(self).__name__}") from None
        key = (func, args, tuple(sorted(kwargs.items())))
        try:
            return cache[key]
        except KeyError:
            value = cache[key] = func(self, *args, **kwargs)
            return value

    return wrapper
