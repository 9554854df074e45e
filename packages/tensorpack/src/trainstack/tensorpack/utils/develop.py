"""tensorpack 0.11's ``tensorpack.utils.develop``: helpers for library code (deprecation, dummies, lazy modules)."""
from __future__ import annotations

import functools
import importlib
import inspect
import os
import types
from collections import defaultdict
from collections.abc import Callable
from datetime import datetime
from typing import Any

from trainstack.callbacks import logger

from .._replaced import unprovided

__all__ = ["create_dummy_class", "create_dummy_func", "building_rtfd", "log_deprecated", "deprecated", "HIDE_DOC",
           "LazyLoader"]


def create_dummy_class(klass: str, dependency: str) -> type:
    """A class standing for ``klass`` when ``dependency`` is missing: using it raises naming both."""
    message = f"Cannot import '{dependency}', therefore '{klass}' is not available"

    class _DummyMetaClass(type):
        def __getattr__(cls, _: str) -> Any:
            raise AttributeError(message)

    class _Dummy(metaclass=_DummyMetaClass):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            raise ImportError(message)

    return _Dummy


def create_dummy_func(func: str, dependency: str | list[str] | tuple[str, ...]) -> Callable[..., Any]:
    """A function standing for ``func`` when ``dependency`` is missing: calling it raises an ImportError."""
    if isinstance(dependency, list | tuple):
        dependency = ",".join(dependency)

    def _dummy(*args: Any, **kwargs: Any) -> Any:
        raise ImportError(f"Cannot import '{dependency}', therefore '{func}' is not available")

    return _dummy


def building_rtfd() -> bool:
    """Whether the documentation is being built (``READTHEDOCS=True`` or ``DOC_BUILDING`` set)."""
    return os.environ.get("READTHEDOCS") == "True" or bool(os.environ.get("DOC_BUILDING"))


_DEPRECATED_LOG_NUM: defaultdict[str, int] = defaultdict(int)


def log_deprecated(name: str = "", text: str = "", eos: str = "", max_num_warnings: int | None = None) -> None:
    """Log tensorpack's ``[Deprecated]`` warning for ``name`` (``eos``: end of service, "YYYY-MM-DD")."""
    if not (name or text):
        raise AssertionError("log_deprecated() needs a name or a text")
    if eos:
        eos = "after " + datetime(*map(int, eos.split("-"))).strftime("%d %b")  # type: ignore[arg-type]
    if name:
        warn_msg = f"{name} will be deprecated {eos}. {text}" if eos else f"{name} was deprecated. {text}"
    else:
        warn_msg = text + (f" Legacy period ends {eos}" if eos else "")
    if max_num_warnings is not None:
        if _DEPRECATED_LOG_NUM[warn_msg] >= max_num_warnings:
            return
        _DEPRECATED_LOG_NUM[warn_msg] += 1
    logger.warn("[Deprecated] " + warn_msg)


def deprecated(text: str = "", eos: str = "", max_num_warnings: int | None = None
               ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A decorator logging :func:`log_deprecated` (the function's name and where it is called) at each call."""
    def deprecated_inner(func: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(func)
        def new_func(*args: Any, **kwargs: Any) -> Any:
            caller = inspect.stack(0)[1]
            log_deprecated(f"{func.__name__} [{caller.filename}:{caller.lineno}]", text, eos,
                           max_num_warnings=max_num_warnings)
            return func(*args, **kwargs)
        return new_func
    return deprecated_inner


def HIDE_DOC(func: Any) -> Any:  # noqa: N802 - tensorpack's name
    """Mark ``func`` as hidden from the documentation (``__HIDE_SPHINX_DOC__``)."""
    func.__HIDE_SPHINX_DOC__ = True
    return func


class LazyLoader(types.ModuleType):
    """A module that imports ``name`` on first attribute access and puts it in ``parent_module_globals``."""

    def __init__(self, local_name: str, parent_module_globals: dict[str, Any], name: str) -> None:
        self._local_name = local_name
        self._parent_module_globals = parent_module_globals
        super().__init__(name)

    def _load(self) -> types.ModuleType:
        module = importlib.import_module(self.__name__)
        self._parent_module_globals[self._local_name] = module
        self.__dict__.update(module.__dict__)
        return module

    def __getattr__(self, item: str) -> Any:
        return getattr(self._load(), item)

    def __dir__(self) -> list[str]:
        return dir(self._load())


__getattr__ = unprovided(__name__)
