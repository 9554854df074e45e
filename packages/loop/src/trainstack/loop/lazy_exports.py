"""A package's public names, imported on first use.

A layer re-exports dozens of names from its modules. Importing all of them when the package is
imported costs start-up time for names a program never uses (``trainstack.dataflow``'s image
augmentors and file formats, ``trainstack.inputs``' remote inputs, ...). A package that uses
this module writes its re-exports once, as ordinary imports under ``if TYPE_CHECKING:`` (read by
type checkers, the API docs and a reader), and::

    __getattr__, __dir__ = lazy_exports(__name__)

The first access of a name runs its import line: ``from .common import BatchData`` when
``BatchData`` is first needed, ``from . import imgaug`` when ``imgaug`` is. The import lines are
read from the package's ``__init__.py`` with ``ast``, once, on the first such access.
"""
from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module ``__getattr__`` and ``__dir__`` of ``package`` (its ``__name__``), serving the
    names its ``if TYPE_CHECKING:`` block imports."""
    sources: dict[str, tuple[str | None, str]] = {}

    def __getattr__(name: str) -> Any:
        if not sources:
            sources.update(_imports_under_type_checking(package))
        if name not in sources:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, attribute = sources[name]
        if module is None:  # ``from . import submodule``
            value = importlib.import_module(f"{package}.{attribute}")
        else:
            value = getattr(importlib.import_module(module, package), attribute)
        setattr(sys.modules[package], name, value)  # the next access is an ordinary attribute
        return value

    def __dir__() -> list[str]:
        namespace = vars(sys.modules[package])
        return sorted({*namespace, *namespace.get("__all__", ())})

    return __getattr__, __dir__


def _imports_under_type_checking(package: str) -> dict[str, tuple[str | None, str]]:
    """``{name: (module, attribute)}`` for each name imported under ``if TYPE_CHECKING:`` at the
    top level of ``package``'s ``__init__.py``; ``module`` is relative to ``package`` (or
    absolute), None for ``from . import name``."""
    path = sys.modules[package].__file__
    if path is None:
        raise ImportError(f"lazy_exports: {package!r} has no __init__.py to read its imports from")
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    found: dict[str, tuple[str | None, str]] = {}
    for node in tree.body:
        if not (isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"):
            continue
        for statement in node.body:
            if not isinstance(statement, ast.ImportFrom):
                raise ImportError(f"lazy_exports: {path}, line {statement.lineno}: only 'from ... import ...' "
                                  "lines can be served lazily under 'if TYPE_CHECKING:'")
            module = "." * statement.level + (statement.module or "")
            for alias in statement.names:
                submodule = statement.level == 1 and statement.module is None
                found[alias.asname or alias.name] = (None if submodule else module, alias.name)
    return found
