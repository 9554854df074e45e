"""docs/porting.md stays true (issues 23 and 24): every test its "proved by" column names exists,
every tensorpack.models name has a row, and every name it marks as provided imports from trainstack
(and every name it marks "not provided" does not). Reads the guide and imports trainstack; trains
nothing. Runs in the `all` session."""
from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import NamedTuple

import pytest

trainstack = pytest.importorskip("trainstack")
if not getattr(trainstack, "__file__", None):
    pytest.skip("the meta-package is not installed", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "porting.md"

# tensorpack 0.11's `tensorpack.models.__all__`. That package cannot be imported without TF1, so the
# list was read from its installed source (.venv/lib/python3.11/site-packages/tensorpack/models/):
# __init__.py concatenates the `__all__` of each module except utils, registry, tflayer, the
# `_`-prefixed ones and the tests, i.e. batch_norm, common, conv2d, fc, layer_norm, linearwrap,
# nonlin, pool, regularize, shape_utils (empty) and shapes, in that order.
TENSORPACK_MODELS_ALL = [
    "BatchNorm", "BatchRenorm",
    "layer_register", "VariableHolder", "rename_tflayer_get_variable", "disable_layer_logging",
    "Conv2D", "Deconv2D", "Conv2DTranspose",
    "FullyConnected",
    "LayerNorm", "InstanceNorm",
    "LinearWrap",
    "Maxout", "PReLU", "BNReLU",
    "MaxPooling", "FixedUnPooling", "AvgPooling", "GlobalAvgPooling",
    "regularize_cost", "regularize_cost_from_collection", "l2_regularizer", "l1_regularizer", "Dropout",
    "ConcatWith",
]

# where a name the guide marks as provided may live, besides `from trainstack import *`
SUBMODULES = ["trainstack.tensorpack", "trainstack.tensorpack.models", "trainstack.tensorpack.tf1", "trainstack.dataflow", "trainstack.dataflow.dataset",
              "trainstack.dataflow.viz", "trainstack.dataflow.imgaug",
              *(f"trainstack.tensorpack.{m}" for m in [
                  "callbacks", "predict", "input_source", "graph_builder", "train", "compat", "dataflow.dataset", "dataflow.imgaug",
                  "tfutils", "tfutils.optimizer", "tfutils.gradproc", "tfutils.summary", "tfutils.symbolic_functions",
                  "tfutils.scope_utils", "tfutils.varmanip", "tfutils.model_utils", "tfutils.tower", "tfutils.common",
                  "tfutils.collect_env", "tfutils.dependency", "utils", "utils.argtools", "utils.viz", "utils.stats", "utils.timer",
                  "utils.fs", "utils.concurrency", "utils.develop", "utils.serialize", "utils.gpu", "utils.palette",
                  "utils.naming", "utils.nvml", "utils.debug"])]

# how a status cell of the name tables starts
STATUSES = ("same", "renamed", "replaced by", "a stub", "not provided", "not in tensorpack 0.11")
PROVIDED = ("same", "a stub")
ABSENT = ("not provided", "not in tensorpack 0.11")

TEST_REF = re.compile(r"tests/[\w/]+\.py(?:::[\w\[\]\-.,]+)*")
DOTTED_NAME = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")


class Row(NamedTuple):
    section: str  # the heading above the table
    line: int
    cells: list
    header: bool = False


def guide_tables() -> list[Row]:
    """The rows of every table in the guide, each table's header marked (separator lines left out)."""
    rows, section, in_table = [], "", False
    lines = GUIDE.read_text().splitlines()
    for number, text in enumerate(lines, 1):
        if text.startswith("#"):
            section = text.lstrip("#").strip()
        if not text.startswith("|"):
            in_table = False
            continue
        cells = [c.strip() for c in text.strip().strip("|").split("|")]
        if not in_table:  # the header
            in_table = True
            rows.append(Row(section, number, cells, header=True))
            continue
        if set(text.replace("|", "").strip()) <= {"-", ":"}:
            continue
        rows.append(Row(section, number, cells))
    return rows


TABLE_ROWS = guide_tables()
BODY = [r for r in TABLE_ROWS if not r.header]


def code_spans(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def names_in(cell: str) -> list[str]:
    """The Python names a cell's code spans give: `logger.set_logger_dir(dir)` -> logger.set_logger_dir;
    spans that are not names (`'horovod'`, `fc/W`) are left out."""
    names = []
    for span in code_spans(cell):
        head = span.split("(")[0].strip()
        if DOTTED_NAME.fullmatch(head) and not head.startswith("tensorpack."):
            names.append(head)
    return names


def status_of(row: Row) -> str:
    cell = row.cells[1] if len(row.cells) > 1 else ""
    return next((s for s in STATUSES if cell.startswith(s)), "")


def in_name_tables(row: Row) -> bool:
    """The tables of "Status of tensorpack's public names" (their sections name a tensorpack module)."""
    return row.section.startswith("`tensorpack.")


def test_every_table_has_a_proved_by_column_and_every_row_fills_it():
    headers = [r for r in TABLE_ROWS if r.header]
    assert len(headers) >= 11
    without = [f"line {r.line}: {r.cells}" for r in headers if r.cells[-1] != "proved by"]
    assert not without, "tables without a 'proved by' column:\n" + "\n".join(without)
    problems = [f"line {r.line}: {len(r.cells)} cells" for r in BODY if len(r.cells) != 3]
    problems += [f"line {r.line}: empty 'proved by'" for r in BODY
                 if len(r.cells) == 3 and r.cells[2] != "—" and not TEST_REF.search(r.cells[2])]
    problems += [f"line {r.line}: 'proved by' holds more than test references: {r.cells[2]!r}" for r in BODY
                 if len(r.cells) == 3 and r.cells[2] != "—"
                 and re.sub(r"`[^`]+`|[,\s]", "", r.cells[2])]
    assert not problems, "\n".join(problems)


def _test_functions(path: Path) -> set[str]:
    return set(re.findall(r"^\s*(?:async\s+)?def (test_\w+)", path.read_text(), flags=re.M))


def test_every_test_the_guide_names_exists():
    """Each `tests/<folder>/<file>.py::<test>` in the guide (the 'proved by' cells and the prose):
    the file exists and defines the test (a parametrized id names its function: `test_x[a-b]`)."""
    text = GUIDE.read_text()
    refs = sorted(set(m.group(0) for m in TEST_REF.finditer(text)))
    assert len(refs) > 100
    problems = []
    for ref in refs:
        path, _, rest = ref.partition("::")
        file = ROOT / path
        if not file.is_file():
            problems.append(f"{ref}: no file {path}")
            continue
        if rest:
            name = rest.split("::")[-1].split("[")[0]
            if name not in _test_functions(file):
                problems.append(f"{ref}: no `def {name}` in {path}")
    assert not problems, "\n".join(problems)


def test_every_tensorpack_models_name_has_a_row_in_the_models_table():
    rows = [r for r in BODY if r.section.startswith("`tensorpack.models`")]
    assert rows, "no `tensorpack.models` table"
    listed = {name.split(".")[0] for r in rows for name in names_in(r.cells[0])}
    missing = [n for n in TENSORPACK_MODELS_ALL if n not in listed]
    assert not missing, f"tensorpack.models names without a row: {missing}"
    unclassified = [r.cells[0] for r in rows if not status_of(r)]
    assert not unclassified, f"rows without a status ({', '.join(STATUSES)}): {unclassified}"


@pytest.fixture(scope="module")
def resolve():
    namespace: dict = {}
    exec("from trainstack import *", namespace)
    modules, failed = [], {}
    for name in SUBMODULES:
        try:
            modules.append(importlib.import_module(name))
        except ImportError as exc:  # a layer's extra not installed, a module being written
            failed[name] = exc

    from trainstack.tensorpack._replaced import is_stand_in

    def find(dotted: str) -> bool:
        """Whether trainstack provides ``dotted`` (a stand-in of a listed name, whose call names the
        replacement, is not provided)."""
        first, *rest = dotted.split(".")
        for scope in [namespace, *(vars(m) for m in modules)]:
            if first in scope:
                obj = scope[first]
                try:
                    for attr in rest:
                        obj = getattr(obj, attr)
                except AttributeError:
                    continue
                return not is_stand_in(obj)
        return False

    find.failed = failed
    return find


def test_the_name_tables_give_each_row_a_status():
    rows = [r for r in BODY if in_name_tables(r)]
    assert len(rows) > 100
    problems = [f"line {r.line}: {r.cells[1][:60]!r}" for r in rows if not status_of(r)]
    assert not problems, f"statuses start with one of {STATUSES}:\n" + "\n".join(problems)


def test_every_name_marked_provided_imports_from_trainstack(resolve):
    problems = []
    for row in (r for r in BODY if in_name_tables(r)):
        status = status_of(row)
        if status in PROVIDED:
            wanted = names_in(row.cells[0])
        elif status == "renamed":  # "renamed `TowerHandle`, `TowerHandles` (...)"
            wanted = names_in(re.split(r"[(:]", row.cells[1])[0])
        else:
            continue
        problems += [f"line {row.line} ({status}): {name}" for name in wanted if not resolve(name)]
    assert not problems, ("names the guide marks as provided that do not import from trainstack "
                          f"(modules that failed to import: {resolve.failed}):\n" + "\n".join(problems))


def test_no_name_marked_not_provided_imports_from_trainstack(resolve):
    """A name that arrived in trainstack changes its row (the guide's rows go stale otherwise)."""
    problems = []
    for row in (r for r in BODY if in_name_tables(r) and status_of(r) in ABSENT):
        problems += [f"line {row.line}: {name}" for name in names_in(row.cells[0]) if resolve(name)]
    assert not problems, f"names marked {ABSENT} that trainstack has:\n" + "\n".join(problems)
