"""The callbacks README's table of the callbacks a user composes gives each one's own
signature: every argument, in order, with its default (issue 34: the docs list them)."""
from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pytest

import trainstack.callbacks as callbacks

README = Path(__file__).resolve().parents[2] / "packages" / "callbacks" / "README.md"


def documented_calls() -> list[str]:
    """The ``Name(args)`` spans of the table's first column."""
    text = README.read_text(encoding="utf-8")
    table = text[text.index("## The callbacks you compose"):]
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    return [call for row in rows for call in re.findall(r"`([A-Z]\w*\(.*?\))`", row.split(" | ")[0])]


def parse(call: str) -> tuple[str, list[tuple[str, str | None]]]:
    """``("Name", [(argument, default source or None), ...])``; ``**kw`` keeps its stars."""
    node = ast.parse(f"def {call}: pass").body[0].args
    defaults = [None] * (len(node.args) - len(node.defaults)) + [ast.unparse(d) for d in node.defaults]
    args = [(a.arg, d) for a, d in zip(node.args, defaults)]
    if node.kwarg:
        args.append(("**" + node.kwarg.arg, None))
    return call[:call.index("(")], args


CALLS = documented_calls()


def test_the_table_lists_the_callbacks_users_compose():
    names = {parse(call)[0] for call in CALLS}
    assert {"PeriodicTrigger", "PeriodicCallback", "EnableCallbackIf", "ModelSaver", "MinSaver", "MaxSaver",
            "ScheduledHyperParamSetter", "StatMonitorParamSetter", "EarlyStopping", "ProgressBar"} <= names
    assert len(CALLS) >= 20


@pytest.mark.parametrize("call", CALLS, ids=[c[:c.index("(")] for c in CALLS])
def test_each_documented_signature_is_the_callbacks_own(call):
    name, documented = parse(call)
    actual = []
    for p in inspect.signature(getattr(callbacks, name)).parameters.values():
        if p.kind is p.VAR_KEYWORD:
            actual.append(("**" + p.name, None))
        else:
            actual.append((p.name, None if p.default is p.empty else repr(p.default)))
    # defaults compared as values: the README writes "hyper.txt" where repr gives 'hyper.txt'
    normalise = [(a, None if d is None else ast.literal_eval(d)) for a, d in documented]
    expected = [(a, None if d is None else ast.literal_eval(d)) for a, d in actual]
    assert normalise == expected, f"README: {call}\ncode:   {name}{inspect.signature(getattr(callbacks, name))}"
