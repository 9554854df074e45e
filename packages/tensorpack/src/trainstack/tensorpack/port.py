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

In a tensorpack script (a file that imports tensorpack, or a module of its own that such a script
imports from its directory, ported in the same command), ``import tensorflow as tf`` means
TensorFlow 1: tensorpack ran these scripts on TF1. The statement becomes ``from trainstack.tensorpack
import tfv1 as tf`` (still an import line), as do ``import tensorflow.compat.v1 as tf``, ``from
tensorflow.compat import v1 as tf`` and ``import tensorflow`` (``... tfv1 as tensorflow``);
``import tensorflow.contrib.slim as slim`` and ``from tensorflow.contrib import slim`` (or ``layers``,
``rnn``) become ``from trainstack.tensorpack.tf1.contrib import slim`` (tfv1's contrib), and ``from
tensorflow.contrib.slim.nets import resnet_v1`` (or ``resnet_utils``) becomes ``from
trainstack.tensorpack.tf1.slim_nets import resnet_v1`` (slim's ResNet v1). Other TensorFlow imports
(``from tensorflow import keras``, ``import tensorflow.contrib.slim.nets``, a statement importing other
modules too) are left as they are, with a line in the report.
``--keep-tensorflow`` leaves every TensorFlow import alone. A file that imports no tensorpack and
is no such module is not touched.
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

__all__ = ["PortError", "Ported", "port_source", "imports_tensorpack", "imports_tensorflow", "local_imports", "main"]

_PREFIX = "trainstack."
_TFV1 = "from trainstack.tensorpack import tfv1 as "
#: the parts of tensorflow.contrib that the TF1 room gives (tfv1.contrib), and the module that has them
_CONTRIB = ("slim", "layers", "rnn")
_CONTRIB_MODULE = "trainstack.tensorpack.tf1.contrib"
#: the networks of tensorflow.contrib.slim.nets that the TF1 room gives, and the module that has them
_NETS = ("resnet_v1", "resnet_utils")
_NETS_MODULE = "trainstack.tensorpack.tf1.slim_nets"
#: the report's reason for each rewritten form
_TF1_REASON = "tensorpack's scripts used TensorFlow 1"
_ROOT = Path(__file__).resolve().parent


class PortError(Exception):
    """A file the port command cannot read or port; the message names it."""


@dataclass
class Ported:
    """One file ported: its new bytes, the lines changed and the notes for the report."""

    source: bytes
    changed_lines: int
    notes: list[str] = field(default_factory=list)
    #: the report's lines on the file's TensorFlow imports (rewritten to tfv1, or left and why)
    tf_notes: list[str] = field(default_factory=list)


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


def imports_tensorpack(tree: ast.AST) -> bool:
    """Whether a parsed file imports tensorpack (any form, anywhere in it): a tensorpack script."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and not node.level and node.module and \
                node.module.split(".")[0] == "tensorpack":
            return True
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "tensorpack" for a in node.names):
            return True
    return False


def local_imports(tree: ast.AST) -> dict[str, int]:
    """The top-level module names a parsed file imports (``import dorefa``, ``from GAN import ...``),
    each with the line of its first import: the script's own modules among them sit next to it."""
    found: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.setdefault(node.module.split(".")[0], node.lineno)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                found.setdefault(alias.name.split(".")[0], node.lineno)
    return dict(sorted(found.items(), key=lambda item: item[1]))


def _is_tensorflow(module: str) -> bool:
    return module == "tensorflow" or module.startswith("tensorflow.")


def imports_tensorflow(tree: ast.AST) -> bool:
    """Whether a parsed file has a TensorFlow import statement."""
    return any(isinstance(node, ast.Import) and any(_is_tensorflow(a.name) for a in node.names)
               or isinstance(node, ast.ImportFrom) and not node.level and _is_tensorflow(node.module or "")
               for node in ast.walk(tree))


def _char_col(line: str, byte_col: int) -> int:
    """ast's UTF-8 byte offset in ``line`` as a character offset."""
    return len(line.encode("utf-8")[:byte_col].decode("utf-8", errors="ignore"))


def _tensorflow_edits(tree: ast.AST, lines: list[str], filename: str,
                      why: str) -> tuple[list[tuple[int, int, str, int]], list[str]]:
    """A tensorpack script's TensorFlow imports: the statements rewritten to tfv1 (as replacements
    ``(row, start column, text, end column)``) and the report's line for each TensorFlow import."""
    edits: list[tuple[int, int, str, int]] = []
    notes: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(_is_tensorflow(a.name) for a in node.names):
            names = [a for a in node.names if _is_tensorflow(a.name)]
            form = names[0]
            name = form.asname or form.name
            tfv1_form = len(node.names) == 1 and (form.name == "tensorflow" or
                                                  (form.name == "tensorflow.compat.v1" and form.asname))
        elif isinstance(node, ast.ImportFrom) and not node.level and _is_tensorflow(node.module or ""):
            form = node.names[0]
            name = form.asname or form.name
            tfv1_form = node.module == "tensorflow.compat" and len(node.names) == 1 and form.name == "v1"
        else:
            continue
        stmt = ast.unparse(node)
        where = f"{filename}:{node.lineno}: {stmt}"
        contrib = _contrib_form(node)
        if contrib and node.lineno == node.end_lineno:
            line = lines[node.lineno - 1]
            edits.append((node.lineno, _char_col(line, node.col_offset), contrib,
                          _char_col(line, node.end_col_offset or 0)))
            what = (f"tfv1.contrib.slim.nets, TF1's {', '.join(_NETS)}" if _NETS_MODULE in contrib
                    else f"tfv1.contrib, TF1's {', '.join(_CONTRIB)}")
            notes.append(f"{where} -> {contrib}: {what} (tensorflow.contrib is not part of TensorFlow 2)")
        elif contrib:
            notes.append(f"{where}: left as it is (it spans lines): put it on one line and port again, to import "
                         f"it from {contrib.split()[1]}")
        elif tfv1_form and node.lineno == node.end_lineno:
            line = lines[node.lineno - 1]
            edits.append((node.lineno, _char_col(line, node.col_offset), _TFV1 + name,
                          _char_col(line, node.end_col_offset or 0)))
            notes.append(f"{where} -> tfv1: {why}")
        elif tfv1_form:
            notes.append(f"{where}: left as it is (it spans lines): put it on one line and port again, "
                         f"to make it tfv1 ({why})")
        elif isinstance(node, ast.Import) and len(node.names) > 1:
            notes.append(f"{where}: left as it is (it imports other modules too): give TensorFlow an import "
                         f"statement of its own and port again, to make it tfv1 ({why})")
        elif (form.name if isinstance(node, ast.Import) else f"{node.module}.{form.name}").split(".")[1] == "contrib":
            notes.append(f"{where}: left as it is: tensorflow.contrib is not part of TensorFlow 2 (tfv1.contrib "
                         f"has {', '.join(_CONTRIB)} and slim.nets' {', '.join(_NETS)} only)")
        else:
            notes.append(f"{where}: left as it is, TensorFlow 2's (for TF1's, take the name from "
                         f"trainstack.tensorpack's tfv1)")
    return edits, notes


def _contrib_form(node: ast.Import | ast.ImportFrom) -> str | None:
    """The import of ``_CONTRIB_MODULE`` replacing ``import tensorflow.contrib.slim as slim`` or
    ``from tensorflow.contrib import slim[, layers]`` (each name one of ``_CONTRIB``), or of
    ``_NETS_MODULE`` replacing ``from tensorflow.contrib.slim.nets import resnet_v1`` (each name one of
    ``_NETS``), else None."""
    module = _CONTRIB_MODULE
    if isinstance(node, ast.Import):
        if len(node.names) != 1 or not node.names[0].asname:
            return None
        parts = node.names[0].name.split(".")
        if len(parts) != 3 or parts[1] != "contrib" or parts[2] not in _CONTRIB:
            return None
        names = [ast.alias(parts[2], node.names[0].asname)]
    elif node.module == "tensorflow.contrib" and all(a.name in _CONTRIB for a in node.names):
        names = node.names
    elif node.module == "tensorflow.contrib.slim.nets" and all(a.name in _NETS for a in node.names):
        names, module = node.names, _NETS_MODULE
    else:
        return None
    return f"from {module} import " + ", ".join(
        a.name if a.asname in (None, a.name) else f"{a.name} as {a.asname}" for a in names)


def port_source(text: str, filename: str = "<script>", *, tensorflow: bool = True,
                tensorpack_script: bool | None = None) -> tuple[str, list[str]]:
    """Port one script's text: the new text and the report's notes. SyntaxError propagates.

    ``tensorflow=False`` leaves TensorFlow imports alone; ``tensorpack_script`` says whether the
    text is a tensorpack script (default: whether it imports tensorpack), whose TensorFlow imports
    mean TensorFlow 1."""
    new, notes, tf_notes = _port_text(text, filename, tensorflow=tensorflow, tensorpack_script=tensorpack_script)
    return new, _sorted(notes + tf_notes)


def _sorted(notes: list[str]) -> list[str]:
    return sorted(set(notes), key=lambda s: (s.split(":")[0], int(s.split(":")[1]), s))


def _port_text(text: str, filename: str, *, tensorflow: bool = True, tensorpack_script: bool | None = None,
               why: str = _TF1_REASON) -> tuple[str, list[str], list[str]]:
    """The new text, the notes on names not provided, and those on TensorFlow imports."""
    tree = ast.parse(text, filename)
    mirrors = _mirror_modules()
    tokens = _tokens(text)
    edits: list[tuple[int, int, str, int]] = []  # (row, from column, text to insert, to column), in characters
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
            edits.append((tok.start[0], tok.start[1], _PREFIX, tok.start[1]))
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
                edits.append((start.start[0], start.start[1], _PREFIX, start.start[1]))
                if alias.asname:
                    aliases[alias.asname] = alias.name
                else:
                    whole.append(node)
                    tail = " as tensorpack" if alias.name == "tensorpack" else f", {_PREFIX}tensorpack as tensorpack"
                    edits.append((end.end[0], end.end[1], tail, end.end[1]))
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
        edits[edits.index(last)] = (last[0], last[1], last[2] + extra, last[3])

    lines = text.splitlines(keepends=True)
    tf_notes: list[str] = []
    if tensorflow and (imports_tensorpack(tree) if tensorpack_script is None else tensorpack_script):
        tf_edits, tf_notes = _tensorflow_edits(tree, lines, filename, why)
        edits += tf_edits
    for row, col, insert, stop in sorted(edits, reverse=True):
        lines[row - 1] = lines[row - 1][:col] + insert + lines[row - 1][stop:]
    return "".join(lines), _sorted(notes), _sorted(tf_notes)


@dataclass
class _Script:
    """One file read and parsed (its text without a BOM)."""

    path: Path
    text: str
    encoding: str
    bom: bool
    tree: ast.Module


def _read(path: Path) -> _Script:
    raw = path.read_bytes()
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
        text = raw.decode(encoding)
    except (SyntaxError, UnicodeDecodeError) as e:
        raise PortError(f"{path}: cannot decode: {e}") from None
    bom = text.startswith("\ufeff")
    text = text[1:] if bom else text
    try:
        tree = ast.parse(text, str(path))
    except SyntaxError as e:
        raise PortError(f"{path}:{e.lineno}: syntax error: {e.msg}; nothing was written") from None
    return _Script(path, text, encoding, bom, tree)


def _own_modules(scripts: list[_Script]) -> dict[Path, Path]:
    """The files that import no tensorpack but that a tensorpack script among ``scripts`` imports
    from its directory (``from dorefa import get_dorefa``), directly or through another such file:
    each with the file importing it."""
    by_place = {(s.path.resolve().parent, s.path.stem): s for s in scripts}
    tensorpack = {s.path for s in scripts if imports_tensorpack(s.tree)}
    importer: dict[Path, Path] = {}
    frontier = [s for s in scripts if s.path in tensorpack]
    while frontier:
        script = frontier.pop(0)
        for name in local_imports(script.tree):
            own = by_place.get((script.path.resolve().parent, name))
            if own is not None and own.path not in tensorpack and own.path not in importer:
                importer[own.path] = script.path
                frontier.append(own)
    return importer


def _left_behind(script: _Script, ported: set[Path]) -> list[str]:
    """The report's lines for a tensorpack script's own modules next to it that this command does not
    port: they import TensorFlow (meaning TF1) and no tensorpack."""
    notes = []
    for name, line in local_imports(script.tree).items():
        own = script.path.resolve().parent / f"{name}.py"
        if own in ported or not own.is_file():
            continue
        try:
            tree = ast.parse(own.read_bytes())
        except (SyntaxError, ValueError):
            continue
        if imports_tensorflow(tree) and not imports_tensorpack(tree):
            notes.append(f"{script.path}:{line}: {name}: the script's own module {own.name} imports TensorFlow "
                         f"and no tensorpack; port it with the script (name both, or their directory) to make "
                         f"its TensorFlow import tfv1 too")
    return notes


def _port_file(script: _Script, *, tensorflow: bool = True, imported_by: Path | None = None) -> Ported:
    why = _TF1_REASON if imported_by is None else \
        f"{_TF1_REASON} ({script.path.name} is imported by {imported_by.name}, a tensorpack script)"
    new, notes, tf_notes = _port_text(script.text, str(script.path), tensorflow=tensorflow,
                                      tensorpack_script=True if imported_by is not None else None, why=why)
    old_lines = script.text.splitlines(keepends=True)
    new_lines = new.splitlines(keepends=True)
    changed = sum(a != b for a, b in zip(old_lines, new_lines))
    return Ported((("\ufeff" if script.bom else "") + new).encode(script.encoding), changed, notes, tf_notes)


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
    parser.add_argument("--keep-tensorflow", action="store_true",
                        help="leave TensorFlow imports as they are (by default a tensorpack script's "
                             "'import tensorflow as tf' becomes trainstack.tensorpack's tfv1: TensorFlow 1)")
    ns = parser.parse_args(argv)
    tensorflow = not ns.keep_tensorflow
    try:
        jobs = _collect(ns.paths, ns.out)
        scripts = [_read(src) for src, _ in jobs]
        own = _own_modules(scripts) if tensorflow else {}
        results = [(src, dst, _port_file(script, tensorflow=tensorflow, imported_by=own.get(src)))
                   for (src, dst), script in zip(jobs, scripts)]
        if tensorflow:
            ported = {src.resolve() for src, _ in jobs}
            for script, (_, _, r) in zip(scripts, results):
                if imports_tensorpack(script.tree):
                    r.tf_notes.extend(_left_behind(script, ported))
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
    tf_notes = [n for _, _, r in results for n in _sorted(r.tf_notes)]
    if tf_notes:
        print("TensorFlow imports of the tensorpack scripts (--keep-tensorflow leaves them as they are):")
        for n in tf_notes:
            print(f"  {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
