"""MkDocs hook: an API page opens with the names a new user needs.

mkdocstrings renders a module's members in the order of its source, where the aliases kept for
tensorpack's scripts (``DumpTensor``, ``Deconv2D``, ``PrefetchData``, ...) come early. An API page
marks a ``::: module`` line with the names to show first, on the line right above it::

    <!-- api-first: ModelDesc, TrainConfig, launch_train_with_config, SimpleTrainer -->
    ::: trainstack.towers

and this hook gives the directive a ``members`` list (mkdocstrings keeps its order, once its
grouping by kind, which puts every attribute and so every alias first, is off): those names, then
the rest of the module's ``__all__`` in its order, then its aliases (a class or function exported
under a name other than its own). Every name of ``__all__`` is still rendered, once. A
marked name missing from ``__all__``, a marker above no directive, or a marked directive that has
options of its own fails the build naming the page.
"""
from __future__ import annotations

import importlib
import inspect
import re
from typing import Any

from mkdocs.exceptions import PluginError

MARKER = re.compile(r"^<!--\s*api-first:\s*(?P<names>[^>]*?)\s*-->[ \t]*$")
DIRECTIVE = re.compile(r"^:::[ \t]+(?P<module>[\w.]+)[ \t]*$")


def member_order(module_name: str, first: list[str], where: str = "docs") -> list[str]:
    """``first``, then the other names of the module's ``__all__`` in order, then its aliases."""
    module = importlib.import_module(module_name)
    public = list(module.__all__)
    unknown = [name for name in first if name not in public]
    if unknown:
        raise PluginError(f"{where}: <!-- api-first: ... --> names {unknown}, which {module_name}.__all__ "
                          "does not export")
    rest = [name for name in public if name not in first]
    aliases = [name for name in rest if is_alias(module, name)]
    return [*first, *(name for name in rest if name not in aliases), *aliases]


def is_alias(module: Any, name: str) -> bool:
    """Whether ``module.name`` is a class or function exported under a name not its own."""
    obj = getattr(module, name, None)
    return (inspect.isclass(obj) or inspect.isfunction(obj)) and getattr(obj, "__name__", name) != name


def order_directives(markdown: str, where: str) -> str:
    lines = markdown.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        marker = MARKER.match(lines[i])
        if marker is None:
            out.append(lines[i])
            i += 1
            continue
        directive = DIRECTIVE.match(lines[i + 1]) if i + 1 < len(lines) else None
        if directive is None:
            raise PluginError(f"{where}: <!-- api-first: ... --> must be the line right above a `::: module` line")
        if i + 2 < len(lines) and lines[i + 2].startswith((" ", "\t")) and lines[i + 2].strip():
            raise PluginError(f"{where}: `::: {directive['module']}` under <!-- api-first: ... --> has options "
                              "of its own; the hook writes its members list")
        first = [name.strip() for name in marker["names"].split(",") if name.strip()]
        members = member_order(directive["module"], first, where)
        out += [lines[i + 1], "    options:", f"      members: [{', '.join(members)}]",
                "      group_by_category: false"]  # else the attributes (aliases among them) come first
        i += 2
    return "\n".join(out)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    return order_directives(markdown, f"docs/{page.file.src_uri}")
