"""Every ```python block of the documentation runs: docs/**/*.md, README.md and packages/*/README.md.

The blocks of one markdown file run in order in one namespace (a fresh ``__main__`` module, so
a block reads like a script), in a fresh Python process, in a fresh temporary working directory,
CPU only: one test case per file. Blocks in other languages are not run. A block right after the
line ``<!-- not-run: <reason> -->`` is not run and is reported as a skipped case with that reason
(say what it needs: a GPU, a cluster, Horovod's launcher...). A hidden set-up block, sybil's
``<!-- invisible-code-block: python ... -->``, runs like a visible one (the reader's own data, say).

Parsing and evaluation are sybil's (its markdown ``PythonCodeBlockParser``); the not-run marker is
this file's parser around it. ``python tests/docs/test_code_blocks.py FILE.md`` runs one file's
blocks the way the test does, in the current directory (the test runs it in a temporary one:
run it from an empty folder, or what the blocks write lands in yours).
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import traceback
import types
import unittest
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sybil import Document, Example, Region
from sybil.parsers.markdown import PythonCodeBlockParser

ROOT = Path(__file__).resolve().parents[2]
FILE_TIMEOUT_S = 300
NOT_RUN = re.compile(r"^[ \t]*<!--\s*not-run:(?P<reason>.*?)-->[ \t]*$", re.MULTILINE)
PYTHON_FENCE = re.compile(r"[ \t]*(?:[-*+>][ \t]+)?(?:`{3,}|~{3,})[ \t]*python[ \t]*$")


def markdown_files(root: Path = ROOT) -> list[Path]:
    """The markdown files whose python blocks must run."""
    return [*sorted((root / "docs").rglob("*.md")), root / "README.md", *sorted(root.glob("packages/*/README.md"))]


class NotRun:
    """The evaluator of a block marked not-run: it reports the block skipped, with the reason."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def __call__(self, example: Example) -> None:
        raise unittest.SkipTest(self.reason)


class NotRunPythonCodeBlockParser:
    """sybil's markdown PythonCodeBlockParser, where a block right after ``<!-- not-run: reason -->``
    gets the NotRun evaluator. A marker without a reason, or not right above a ```python fence,
    is an error (a marker that skips nothing, or the wrong block, would go unnoticed)."""

    def __init__(self) -> None:
        self.blocks = PythonCodeBlockParser()

    def __call__(self, document: Document) -> Iterator[Region]:
        text = document.text
        markers: dict[int, str] = {}  # where the marked fence's line starts -> the reason
        for match in NOT_RUN.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            reason = match.group("reason").strip()
            if not reason:
                raise ValueError(f"{document.path}:{line}: `<!-- not-run: -->` needs a reason, "
                                 "e.g. `<!-- not-run: needs a GPU -->`")
            fence_start = match.end() + 1
            fence_line = text[fence_start:].split("\n", 1)[0]
            if not PYTHON_FENCE.match(fence_line):
                raise ValueError(f"{document.path}:{line}: `<!-- not-run: {reason} -->` must be the line right "
                                 f"above a ```python block, but the next line is {fence_line!r}")
            markers[fence_start] = reason
        for region in self.blocks(document):
            reason = markers.pop(region.start, None)
            if reason is not None:
                region.evaluator = NotRun(reason)
            yield region
        for start, reason in markers.items():
            line = text.count("\n", 0, start)
            raise ValueError(f"{document.path}:{line}: `<!-- not-run: {reason} -->` marks no python block "
                             "that sybil could read")


def parse(path: Path) -> Document:
    return Document.parse(str(path), NotRunPythonCodeBlockParser())


@dataclass(frozen=True)
class Block:
    path: Path
    line: int
    not_run: str | None  # the reason, for a block that is not run

    @property
    def id(self) -> str:
        return f"{_rel(self.path)}:{self.line}"


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def blocks(path: Path) -> list[Block]:
    """The python blocks of `path` (visible or not), in order."""
    found = []
    for example in parse(path):
        evaluator = example.region.evaluator
        found.append(Block(path, example.line, evaluator.reason if isinstance(evaluator, NotRun) else None))
    return found


# --- running one file (in its own process) ----------------------------------------------------

def run_document(path: Path) -> int:
    """Run the python blocks of `path` in order, in one namespace: a fresh ``__main__`` module (so
    that what a block defines pickles by reference, as in a script). Prints one line per block;
    0 if every block ran or was marked not-run, 1 at the first that raised (its traceback
    printed, with the markdown file's line numbers)."""
    main = types.ModuleType("__main__")
    main.__dict__["__file__"] = str(path)
    sys.modules["__main__"] = main
    document = parse(path)
    document.namespace = main.__dict__
    for example in document:
        start = time.perf_counter()
        try:
            example.evaluate()
        except unittest.SkipTest as skip:
            print(f"{_rel(path)}:{example.line}: not run: {skip}", flush=True)
            continue
        except BaseException as exc:
            tb = exc.__traceback__  # from the markdown file's frame on: sybil's own frames say nothing
            while tb is not None and tb.tb_frame.f_code.co_filename != str(path):
                tb = tb.tb_next
            traceback.print_exception(type(exc), exc, tb or exc.__traceback__)
            print(f"{_rel(path)}:{example.line}: FAILED (the block starting on that line)", flush=True)
            return 1
        print(f"{_rel(path)}:{example.line}: ran in {time.perf_counter() - start:.1f} s", flush=True)
    return 0


def run_in_subprocess(path: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "TF_CPP_MIN_LOG_LEVEL": "2", "MPLBACKEND": "Agg",
           "PYTHONHASHSEED": "0"}
    return subprocess.run([sys.executable, __file__, str(path)], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=FILE_TIMEOUT_S)


# --- the tests --------------------------------------------------------------------------------

def _collect() -> tuple[list[Path], list[Block], dict[Path, str]]:
    to_run: list[Path] = []
    not_run: list[Block] = []
    broken: dict[Path, str] = {}
    for path in markdown_files():
        try:
            found = blocks(path)
        except ValueError as exc:
            broken[path] = str(exc)
            to_run.append(path)
            continue
        if any(b.not_run is None for b in found):
            to_run.append(path)
        not_run += [b for b in found if b.not_run is not None]
    return to_run, not_run, broken


TO_RUN, NOT_RUN_BLOCKS, BROKEN = _collect() if __name__ != "__main__" else ([], [], {})


@pytest.mark.parametrize("path", TO_RUN, ids=_rel)
def test_python_blocks_run(path: Path, tmp_path: Path) -> None:
    if path in BROKEN:
        pytest.fail(BROKEN[path])
    proc = run_in_subprocess(path, tmp_path)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"a python block of {_rel(path)} failed:\n{output[-6000:]}"
    assert "ran in" in proc.stdout, f"no block of {_rel(path)} ran:\n{output[-3000:]}"


@pytest.mark.parametrize("block", NOT_RUN_BLOCKS, ids=lambda b: b.id)
def test_not_run_block(block: Block) -> None:
    pytest.skip(f"{block.id} not run: {block.not_run}")


def test_readme_blocks_are_collected() -> None:
    readme = ROOT / "README.md"
    assert readme in TO_RUN or any(b.path == readme for b in NOT_RUN_BLOCKS), "README.md's python blocks were missed"


# the convention itself, on small documents ------------------------------------------------------

SAMPLE = """\
# A page

```python
import os
seen = [os.getcwd()]
```

Text, then a block that is not run:

<!-- not-run: needs 8 GPUs -->
```python
raise SystemExit("this block must not run")
```

```bash
exit 1
```

<!-- invisible-code-block: python
seen.append("hidden")
-->

```python
seen.append(__name__)
assert seen[1:] == ["hidden", "__main__"], seen
print("namespace shared, in order")
```
"""


def test_marked_block_skipped_other_languages_ignored_namespace_shared(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(SAMPLE)
    found = blocks(page)
    assert [b.not_run for b in found] == [None, "needs 8 GPUs", None, None]
    workdir = tmp_path / "work"
    workdir.mkdir()
    proc = run_in_subprocess(page, workdir)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "namespace shared, in order" in proc.stdout
    assert "not run: needs 8 GPUs" in proc.stdout


def test_a_failing_block_fails_with_its_line(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("Intro.\n\n```python\nx = 1\n```\n\n```python\nassert x == 2, 'x is 1'\n```\n")
    proc = run_in_subprocess(page, tmp_path)
    assert proc.returncode == 1
    assert "page.md:7: FAILED" in proc.stdout
    assert "AssertionError: x is 1" in proc.stderr


@pytest.mark.parametrize("text, message", [
    ("<!-- not-run: needs a GPU -->\n```bash\nnvidia-smi\n```\n", "right above a ```python block"),
    ("<!-- not-run: needs a GPU -->\n\n```python\nx = 1\n```\n", "right above a ```python block"),
    ("<!-- not-run: -->\n```python\nx = 1\n```\n", "needs a reason"),
])
def test_misplaced_or_empty_marker_is_an_error(tmp_path: Path, text: str, message: str) -> None:
    page = tmp_path / "page.md"
    page.write_text(text)
    with pytest.raises(ValueError, match=re.escape(message)):
        blocks(page)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(f"usage: python {sys.argv[0]} FILE.md  (runs the file's python blocks in order)")
    sys.exit(run_document(Path(sys.argv[1]).resolve()))
