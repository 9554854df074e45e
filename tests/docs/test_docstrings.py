"""The API reference is complete: every public name has its own documentation, and every package
has its section in docs/api/.

Public names are the ``__all__`` of each layer (one per packages/<layer>/), of the subpackages
with their own reference section (``trainstack.dataflow.imgaug``, ``.dataflow.dataset``,
``.towers.tf1``) and of the meta-package ``trainstack``. What "its own documentation" means:

- a class: a docstring in its own ``__dict__`` (an inherited one describes the base class; the
  signature that ``dataclass`` and ``namedtuple`` write is not a docstring);
- a function: a docstring;
- a trainstack module: its module docstring;
- anything else (a constant, a module of another project such as ``tfv1``): a ``#:`` comment on
  the line above its assignment, the doc-comment form that Sphinx and readers of the source know.
"""
from __future__ import annotations

import importlib
import inspect
import re
import types
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
API_DIR = ROOT / "docs" / "api"
LAYERS = sorted(p.parent.name for p in (ROOT / "packages").glob("*/pyproject.toml"))
SUBPACKAGES = ["trainstack.dataflow.imgaug", "trainstack.dataflow.dataset", "trainstack.tensorpack.tf1"]
MODULES = [*(f"trainstack.{layer}" for layer in LAYERS), *SUBPACKAGES, "trainstack"]
DIRECTIVE = re.compile(r"^:::[ \t]+(?P<module>[\w.]+)[ \t]*$", re.MULTILINE)


def _import(name: str) -> types.ModuleType:
    module = importlib.import_module(name)
    if name == "trainstack" and not getattr(module, "__file__", None):
        pytest.skip("the meta-package is not installed")
    return module


def _source_dirs() -> list[Path]:
    """Where the exported constants are assigned: the packages' source folders."""
    dirs = []
    for name in MODULES:
        file = getattr(importlib.import_module(name), "__file__", None)
        if file:
            dirs.append(Path(file).parent)
    return sorted(set(dirs))


def doc_comment(name: str, dirs: list[Path]) -> str | None:
    """The ``#:`` comment above the module-level assignment of `name` in the sources under
    `dirs`, or None (no such assignment, or one without the comment)."""
    assignment = re.compile(rf"^{re.escape(name)}\s*(?::[^=\n]*)?=(?!=)")
    for folder in dirs:
        for source in sorted(folder.rglob("*.py")):
            lines = source.read_text(encoding="utf-8").splitlines()
            for i, line in enumerate(lines):
                if assignment.match(line):
                    comment = []
                    while i > 0 and lines[i - 1].startswith("#:"):
                        i -= 1
                        comment.insert(0, lines[i][2:].strip())
                    if comment:
                        return " ".join(comment)
    return None


def missing_doc(name: str, obj: Any, dirs: list[Path]) -> str | None:
    """Why `obj`, exported as `name`, is undocumented, or None if it is documented."""
    if inspect.isclass(obj):
        doc = obj.__dict__.get("__doc__")
        if not (isinstance(doc, str) and doc.strip()):
            return "class without a docstring of its own"
        if doc.startswith(f"{obj.__name__}(") and doc.rstrip().endswith(")"):
            return "class whose only docstring is the signature dataclass/namedtuple wrote"
        return None
    if inspect.isfunction(obj) or inspect.isbuiltin(obj) or inspect.ismethod(obj):
        return None if (obj.__doc__ or "").strip() else "function without a docstring"
    if isinstance(obj, types.ModuleType) and obj.__name__.startswith("trainstack."):
        return None if (obj.__doc__ or "").strip() else "module without a module docstring"
    if doc_comment(name, dirs) is None:
        return (f"{type(obj).__name__} without a `#:` comment above its assignment `{name} = ...` "
                "in the package sources")
    return None


@pytest.mark.parametrize("module_name", MODULES)
def test_every_public_name_is_documented(module_name: str) -> None:
    module = _import(module_name)
    assert module.__all__, f"{module_name}.__all__ is empty"
    dirs = _source_dirs()
    undocumented = []
    for name in module.__all__:
        reason = missing_doc(name, getattr(module, name), dirs)
        if reason:
            undocumented.append(f"{module_name}.{name}: {reason}")
    assert not undocumented, "undocumented public names:\n" + "\n".join(undocumented)


def test_the_rule_finds_what_is_missing(tmp_path: Path) -> None:
    import collections
    import dataclasses

    class Documented:
        """Says what it is."""

    class Inherits(Documented):
        pass

    @dataclasses.dataclass
    class Record:
        x: int

    def undocumented_function() -> None:
        pass

    (tmp_path / "consts.py").write_text("#: the answer\nANSWER = 42\n\nBARE = 1\n")
    assert missing_doc("Documented", Documented, [tmp_path]) is None
    assert "of its own" in missing_doc("Inherits", Inherits, [tmp_path])
    assert "signature" in missing_doc("Record", Record, [tmp_path])
    assert "signature" in missing_doc("Pair", collections.namedtuple("Pair", "a b"), [tmp_path])
    assert "function" in missing_doc("undocumented_function", undocumented_function, [tmp_path])
    assert missing_doc("ANSWER", 42, [tmp_path]) is None
    assert "`#:` comment" in missing_doc("BARE", 1, [tmp_path])
    assert "`#:` comment" in missing_doc("ELSEWHERE", 1, [tmp_path])


def api_directives() -> dict[str, str]:
    """module -> the docs/api page whose ``::: module`` renders it."""
    found: dict[str, str] = {}
    for page in sorted(API_DIR.glob("*.md")):
        for match in DIRECTIVE.finditer(page.read_text(encoding="utf-8")):
            found.setdefault(match.group("module"), page.name)
    return found


def test_every_package_has_an_api_reference_section() -> None:
    directives = api_directives()
    missing = [name for name in MODULES if name not in directives]
    assert not missing, (f"no `::: <module>` line in docs/api/*.md for {', '.join(missing)} "
                         f"(found: {', '.join(sorted(directives))})")


def test_every_api_page_is_in_the_navigation() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    pages = [f"api/{page.name}" for page in sorted(API_DIR.glob("*.md"))]
    assert pages, "docs/api/ has no pages"
    assert not [p for p in pages if p not in nav], "docs/api pages missing from mkdocs.yml's nav"
