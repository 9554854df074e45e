"""A griffe extension (loaded by mkdocstrings, see mkdocs.yml): ``#:`` comments document attributes.

trainstack documents its constants and its aliases of tensorpack's names with a ``#:`` comment
above the assignment (tests/docs/test_docstrings.py requires it for exported constants); griffe
reads only docstrings, so without this the API reference would leave those names out. A comment
above a run of assignments documents each of them (``PrefetchData = ...`` / ``PrefetchDataZMQ =
...``), and ``NAME.__doc__ = "..."`` right after an assignment counts as its docstring.

The docstrings' Sphinx roles (``:class:`~trainstack.loop.TrainLoop``` and the like), which
Markdown would show as typed, become inline code (``TrainLoop``).
"""
from __future__ import annotations

import ast
import re
from typing import Any

from griffe import Attribute, Docstring, Extension

ROLE = re.compile(r":(?:py:)?(?:class|func|meth|attr|mod|exc|data|obj|const):`(?P<tilde>~?)(?P<target>[^`]+)`")
ASSIGNMENT = re.compile(r"^(?P<indent>[ \t]*)[A-Za-z_]\w*\s*(?::[^=\n]*)?=(?!=)")


def doc_comment(lines: list[str], lineno: int) -> str | None:
    """The ``#:`` comment above line `lineno` (1-based) of `lines`, across the assignments of the
    same run right above it."""
    i = lineno - 1  # index of the assignment's line
    match = ASSIGNMENT.match(lines[i]) if 0 <= i < len(lines) else None
    indent = match.group("indent") if match else ""
    while i > 0 and (other := ASSIGNMENT.match(lines[i - 1])) and other.group("indent") == indent:
        i -= 1
    comment: list[str] = []
    while i > 0 and lines[i - 1].strip().startswith("#:"):
        i -= 1
        comment.insert(0, lines[i].strip()[2:].strip())
    return "\n".join(comment) if comment else None


def doc_assignment(lines: list[str], name: str, endlineno: int) -> str | None:
    """The string of a ``name.__doc__ = "..."`` statement on the line after the assignment."""
    if endlineno < len(lines):
        match = re.match(rf"^\s*{re.escape(name)}\.__doc__\s*=\s*(?P<value>.+)$", lines[endlineno])
        if match:
            try:
                value = ast.literal_eval(match.group("value"))
            except (ValueError, SyntaxError):
                return None
            return value if isinstance(value, str) else None
    return None


def plain_roles(text: str) -> str:
    """``:class:`~a.b.C``` -> ```C```, ``:func:`a.b.f``` -> ```a.b.f```."""
    def code(match: re.Match[str]) -> str:
        target = match.group("target")
        return f"`{target.rsplit('.', 1)[-1] if match.group('tilde') else target}`"
    return ROLE.sub(code, text)


class DocComments(Extension):
    """Give an attribute without a docstring the text of its ``#:`` comment (or ``__doc__``);
    turn Sphinx roles into inline code."""

    def on_attribute_instance(self, *, node: Any, attr: Attribute, agent: Any, **kwargs: Any) -> None:
        if attr.docstring is not None or attr.lineno is None or attr.filepath is None:
            return
        try:
            lines = attr.lines_collection[attr.filepath]
        except KeyError:
            return
        text = doc_comment(lines, attr.lineno) or doc_assignment(lines, attr.name, attr.endlineno or attr.lineno)
        if text:
            attr.docstring = Docstring(text, lineno=attr.lineno, parent=attr)

    def on_package(self, *, pkg: Any, **kwargs: Any) -> None:
        todo = [pkg]
        while todo:
            obj = todo.pop()
            if obj.docstring is not None:
                obj.docstring.value = plain_roles(obj.docstring.value)
            todo.extend(member for member in obj.members.values() if not member.is_alias)
