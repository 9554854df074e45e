"""``python -m trainstack.tensorpack.port SCRIPT_OR_DIR... [--out DIR]``: port tensorpack scripts.

It rewrites the import lines only, inserting ``trainstack.`` before ``tensorpack`` where a
statement imports from it; every other byte of a file stays as it was (encoding, line endings,
comments). ``import tensorpack`` becomes ``import trainstack.tensorpack as tensorpack``, so that the
script's ``tensorpack.x.y`` still names the same things; ``import tensorpack.x`` (no ``as``) becomes
``import trainstack.tensorpack.x, trainstack.tensorpack as tensorpack`` (which binds ``trainstack``
too). For those two forms, the modules the script reaches as ``tensorpack.a.b.name`` are imported
in the same statement, as ``import tensorpack`` loaded them all in tensorpack.

With ``--out DIR`` the ported copies go to DIR (a file argument to ``DIR/<name>``, the files below a
directory argument to ``DIR/<path below it>``; unchanged files are copied too). Without it the files
change in place and the original of each changed file is kept as ``<name>.py.orig``. Every file is
read and checked before anything is written. The report lists the files, how many lines each
changed, and each name the script imports that trainstack.tensorpack does not provide, with what
to use instead (trainstack.tensorpack's one table of them, ``_replaced.py``).
"""
from __future__ import annotations

import argparse
import ast
import io
import sys
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

from ._replaced import message, unprovided_names

__all__ = ["PortError", "Ported", "port_source", "main"]

_PREFIX = "trainstack."
_ROOT = Path(__file__).resolve().parent


class PortError(Exception):
    """A file the port command cannot read or port; the message names it."""


@dataclass
class Ported:
    """One file ported: its new bytes, the lines changed and the notes for the report."""

    source: bytes
    changed_lines: int
    notes: list[str] = field(default_factory=list)


def _mirror_modules() -> set[str]:
    """tensorpack's module paths that trainstack.tensorpack mirrors, read from the package's files."""
    found = set()
    for path in _ROOT.rglob("*.py"):
        parts = path.relative_to(_ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if not any(p.startswith("_") for p in parts) and parts != ("port",):
            found.add(".".join(("tensorpack",) + parts))
    return found


def _tokens(text: str) -> list[tokenize.TokenInfo]:
    return [t for t in tokenize.generate_tokens(io.StringIO(text).readline)
            if t.type not in (tokenize.NL, tokenize.COMMENT)]


def _dotted(node: ast.expr) -> list[str] | None:
    """``a.b.c`` as ``['a', 'b', 'c']``, or None for another expression."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id] + parts[::-1]
    return None


def _split(chain: list[str], mirrors: set[str]) -> tuple[str, str | None]:
    """The longest module prefix of ``tensorpack.a.b.name``, and the name after it."""
    for cut in range(len(chain), 0, -1):
        if ".".join(chain[:cut]) in mirrors:
            return ".".join(chain[:cut]), (chain[cut] if cut < len(chain) else None)
    return chain[0], chain[1] if len(chain) > 1 else None


def port_source(text: str, filename: str = "<script>") -> tuple[str, list[str]]:
    """Port one script's text: the new text and the report's notes. SyntaxError propagates."""
    tree = ast.parse(text, filename)
    mirrors = _mirror_modules()
    tokens = _tokens(text)
    edits: list[tuple[int, int, str]] = []  # (row, column in characters, text to insert)
    notes: list[str] = []
    star: list[tuple[str, int]] = []   # (tensorpack module, line) of the star imports
    aliases: dict[str, str] = {}       # a name bound to a tensorpack module -> its path
    whole: list[ast.Import] = []       # statements binding the name 'tensorpack' itself

    def note(line: int, module: str, name: str) -> None:
        text = message(module, name)
        if text is not None:
            notes.append(f"{filename}:{line}: {name}: {text}")

    def first_token(node: ast.stmt, word: str) -> int:
        for i, tok in enumerate(tokens):
            if tok.start[0] == node.lineno and tok.string == word and \
                    len(tok.line[:tok.start[1]].encode("utf-8")) == node.col_offset:
                return i
        raise AssertionError(f"{filename}:{node.lineno}: no {word!r} token where ast saw one")

    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and not node.level and node.module and \
                node.module.split(".")[0] == "tensorpack":
            tok = tokens[first_token(node, "from") + 1]
            edits.append((tok.start[0], tok.start[1], _PREFIX))
            if node.module not in mirrors:
                notes.append(f"{filename}:{node.lineno}: {node.module}: trainstack.tensorpack has no such module "
                             f"yet; import from its package instead")
            for alias in node.names:
                if alias.name == "*":
                    star.append((node.module, node.lineno))
                elif f"{node.module}.{alias.name}" in mirrors:
                    aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
                else:
                    note(node.lineno, node.module, alias.name)
        elif isinstance(node, ast.Import) and any(a.name.split(".")[0] == "tensorpack" for a in node.names):
            i = first_token(node, "import") + 1
            for alias in node.names:
                start = tokens[i]
                i += 2 * alias.name.count(".") + 1             # NAME (. NAME)*
                end = tokens[i - 1]
                if alias.asname:
                    i += 2                                       # as NAME
                i += 1                                           # , or the end
                if alias.name.split(".")[0] != "tensorpack":
                    continue
                edits.append((start.start[0], start.start[1], _PREFIX))
                if alias.asname:
                    aliases[alias.asname] = alias.name
                else:
                    whole.append(node)
                    tail = " as tensorpack" if alias.name == "tensorpack" else f", {_PREFIX}tensorpack as tensorpack"
                    edits.append((end.end[0], end.end[1], tail))
                if alias.name not in mirrors:
                    notes.append(f"{filename}:{node.lineno}: {alias.name}: trainstack.tensorpack has no such "
                                 f"module yet")

    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    for module, line in star:
        for name in unprovided_names(module):
            if name in used:
                note(line, module, name)
    reached: set[str] = set()
    for node in ast.walk(tree):
        chain = _dotted(node) if isinstance(node, ast.Attribute) else None
        if not isinstance(node, ast.Attribute) or not chain or len(chain) < 2:
            continue
        if chain[0] in aliases:
            owner, attr = _split([aliases[chain[0]]] + chain[1:], mirrors)
        elif chain[0] == "tensorpack" and whole:
            owner, attr = _split(chain, mirrors)
            if owner != "tensorpack":
                reached.add(owner)
        else:
            continue
        if attr is not None:
            note(node.lineno, owner, attr)
    if whole and reached:   # import the submodules the script reaches, in the first such statement
        stmt = min(whole, key=lambda n: (n.lineno, n.col_offset))
        last = max((e for e in edits if stmt.lineno <= e[0] <= (stmt.end_lineno or stmt.lineno)),
                   key=lambda e: (e[0], e[1]))
        deepest = {m for m in reached if not any(r.startswith(m + ".") for r in reached)}
        extra = "".join(f", {_PREFIX}{m}" for m in sorted(deepest))
        edits[edits.index(last)] = (last[0], last[1], last[2] + extra)

    lines = text.splitlines(keepends=True)
    for row, col, insert in sorted(edits, reverse=True):
        lines[row - 1] = lines[row - 1][:col] + insert + lines[row - 1][col:]
    return "".join(lines), sorted(set(notes), key=lambda s: (s.split(":")[0], int(s.split(":")[1]), s))


def _port_file(path: Path) -> Ported:
    raw = path.read_bytes()
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
        text = raw.decode(encoding)
    except (SyntaxError, UnicodeDecodeError) as e:
        raise PortError(f"{path}: cannot decode: {e}") from None
    bom = text.startswith("\ufeff")
    try:
        new, notes = port_source(text[1:] if bom else text, str(path))
    except SyntaxError as e:
        raise PortError(f"{path}:{e.lineno}: syntax error: {e.msg}; nothing was written") from None
    old_lines = text.splitlines(keepends=True)
    new_lines = (("\ufeff" + new) if bom else new).splitlines(keepends=True)
    changed = sum(a != b for a, b in zip(old_lines, new_lines))
    return Ported((("\ufeff" if bom else "") + new).encode(encoding), changed, notes)


def _collect(args: list[str], out: Path | None) -> list[tuple[Path, Path]]:
    """Each script to port, with where it goes."""
    jobs: list[tuple[Path, Path]] = []
    for arg in args:
        path = Path(arg)
        if path.is_dir():
            for script in sorted(path.rglob("*.py")):
                jobs.append((script, (out / script.relative_to(path)) if out else script))
        elif path.is_file():
            jobs.append((path, (out / path.name) if out else path))
        else:
            raise PortError(f"{arg}: no such file or directory")
    targets = [t.resolve() for _, t in jobs]
    clash = {str(t) for t in targets if targets.count(t) > 1}
    if clash:
        raise PortError(f"two scripts would be written to the same place: {', '.join(sorted(clash))}")
    if out is not None and any(s.resolve() == t for (s, _), t in zip(jobs, targets)):
        raise PortError(f"--out {out} would overwrite the scripts themselves; use another directory")
    return jobs


def main(argv: list[str] | None = None) -> int:
    """Run the port command; 0 on success, 2 on bad arguments or a script that cannot be ported."""
    parser = argparse.ArgumentParser(
        prog="python -m trainstack.tensorpack.port",
        description="Port tensorpack scripts: rewrite their tensorpack imports to trainstack.tensorpack, "
                    "leaving every other line as it is.")
    parser.add_argument("paths", nargs="+", metavar="SCRIPT_OR_DIR", help="a script, or a directory (every *.py below)")
    parser.add_argument("--out", metavar="DIR", type=Path,
                        help="write the ported copies here (default: in place, keeping <name>.py.orig)")
    ns = parser.parse_args(argv)
    try:
        jobs = _collect(ns.paths, ns.out)
        results = [(src, dst, _port_file(src)) for src, dst in jobs]
        if ns.out is None:
            kept = [Path(f"{src}.orig") for src, _, r in results if r.changed_lines and Path(f"{src}.orig").exists()]
            if kept:
                raise PortError(f"{kept[0]} exists (an earlier port's backup?); move it away first; "
                                f"nothing was written")
    except PortError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    total = 0
    for src, dst, r in results:
        if ns.out is not None:
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_bytes(r.source)
        elif r.changed_lines:
            Path(f"{src}.orig").write_bytes(src.read_bytes())
            src.write_bytes(r.source)
        total += r.changed_lines
        where = f" -> {dst}" if ns.out is not None else (f" (original kept as {src}.orig)" if r.changed_lines else "")
        print(f"{src}: {r.changed_lines} import line{'s' if r.changed_lines != 1 else ''} changed{where}")
    print(f"{len(results)} file{'s' if len(results) != 1 else ''}, {total} line{'s' if total != 1 else ''} changed")
    notes = [n for _, _, r in results for n in r.notes]
    if notes:
        print("names trainstack.tensorpack does not provide (change these lines by hand):")
        for n in notes:
            print(f"  {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
