"""trainstack.dataflow has every public name of tensorpack 0.11's tensorpack.dataflow, and the
README's "Differences from tensorpack" section names only tests that exist."""
from __future__ import annotations

import ast
import os
import re
import sys
from pathlib import Path

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)
from pipelines import tp, ts  # noqa: E402

ROOT = Path(HERE).parents[1]
README = ROOT / "packages" / "dataflow" / "README.md"
SECTION = "Differences from tensorpack"


def test_every_public_name_of_tensorpack_dataflow_is_in_trainstack_dataflow():
    missing = sorted(set(tp.__all__) - set(ts.__all__))
    assert not missing, f"trainstack.dataflow.__all__ lacks tensorpack.dataflow's {missing}"
    absent = sorted(name for name in ts.__all__ if not hasattr(ts, name))
    assert not absent, f"trainstack.dataflow.__all__ names {absent}, which it does not define"


def differences_section() -> str:
    text = README.read_text(encoding="utf-8")
    match = re.search(rf"^(#+) {SECTION}\n(.*?)(?=^#{{1,3}} |\Z)", text, re.S | re.M)
    assert match, f"{README} has no '{SECTION}' section"
    return match.group(2)


def test_each_line_of_the_differences_section_names_a_test_that_exists():
    section = differences_section()
    refs = re.findall(r"`(tests/[\w/]+\.py)::(\w+)`", section)
    items = [item.strip() for item in re.split(r"^- ", section, flags=re.M)[1:]]  # bullets, with their lines
    assert len(items) >= 8, f"the '{SECTION}' section lists {len(items)} differences"
    unnamed = [item.splitlines()[0] for item in items if "`tests/" not in item]
    assert not unnamed, f"these differences name no test: {unnamed}"
    for path, name in refs:
        file = ROOT / path
        assert file.is_file(), f"the README names {path}, which does not exist"
        defined = {node.name for node in ast.walk(ast.parse(file.read_text(encoding="utf-8")))
                   if isinstance(node, ast.FunctionDef)}
        assert name in defined, f"the README names {path}::{name}, which is not a test there"
