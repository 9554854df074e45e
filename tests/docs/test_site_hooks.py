"""The site's build hooks (docs/hooks/): the figure placeholders and the ``#:`` doc comments.

The build itself (``mkdocs build --strict`` in the `docs` session) runs them on the real pages;
these tests pin their rules on small inputs, and check the placeholders the pages use now without
running the main job.
"""
from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip("mkdocs")
pytest.importorskip("matplotlib")

ROOT = Path(__file__).resolve().parents[2]
HOOKS = ROOT / "docs" / "hooks"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"docs_hooks_{name}", HOOKS / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


plots = _load("plots")

TABLE = """\
# Numbers

## Speed

| contender | steps/s | time (ms) | / reference |
|---|---|---|---|
| `fast` | 120 (1.20x) | 28x28 | 1.20x |
| slow | 80 (0.80x) | 30 | 0.80x |
| missing | — | 31 | — |

| setting | ratio |
|---|---|
| a | 1.5 |
| b | 0.5 |

## No ratios here

| a | b |
|---|---|
| 1 | 2 |
"""


def test_ratio_columns_are_the_x_cells_and_the_ratio_headers() -> None:
    speed = plots.sections(TABLE)["Speed"][1]
    first, second = plots.tables(speed)
    columns = plots.ratio_columns(first)
    assert list(columns) == ["steps/s", "/ reference"]  # "28x28" is not a ratio
    assert columns["steps/s"][:2] == [1.2, 0.8]
    assert all(v != v for v in (columns["steps/s"][2], columns["/ reference"][2]))  # NaN: no value
    assert plots.ratio_columns(second) == {"ratio": [1.5, 0.5]}


def test_a_section_runs_to_the_next_heading_of_its_level() -> None:
    found = plots.sections(TABLE)
    assert len(plots.tables(found["Numbers"][1])) == 3
    assert len(plots.tables(found["Speed"][1])) == 2
    assert plots.ratio_columns(plots.tables(found["No ratios here"][1])[0]) == {}


def test_one_figure_per_question_and_clear_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A placeholder draws one figure: the section's first ratio table (the later ones, earlier
    runs or goals, stay text)."""
    source = tmp_path / "README.md"
    source.write_text(TABLE)
    monkeypatch.setattr(plots, "ROOT", tmp_path)  # error messages name the file relative to it
    figure = plots.benchmark_figure("Speed", "speed over the reference", "page.md", source)
    assert figure.src_uri == "assets/plots/benchmarks-speed.svg"
    assert figure.svg.lstrip().startswith(b"<?xml")
    assert figure.alt.startswith("Bar chart: speed over the reference, for each contender (steps/s, / reference)")
    with pytest.raises(plots.PluginError, match='no such heading in README.md; its headings are "Numbers"'):
        plots.benchmark_figure("Sped", "x", "page.md", source)
    with pytest.raises(plots.PluginError, match="none of the 1 tables under that heading has a ratio column"):
        plots.benchmark_figure("No ratios here", "x", "page.md", source)


def test_a_chart_has_no_title_its_legend_names_the_columns_and_its_axis_the_ratio() -> None:
    table = plots.tables(plots.sections(TABLE)["Speed"][1])[0]
    fig = plots.bar_chart("speed over the reference", table, plots.ratio_columns(table))
    (ax,) = fig.axes
    assert ax.get_title() == "" and fig._suptitle is None
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["steps/s", "/ reference"]
    assert all(t.get_fontsize() >= 10 for t in ax.get_legend().get_texts())
    assert ax.get_xlabel().startswith("speed over the reference")
    plots.plt.close(fig)


def test_unknown_placeholder_fails_naming_page_and_expected_forms() -> None:
    with pytest.raises(plots.PluginError, match=r"docs/x\.md: unknown placeholder <!-- plot: main job -->; expected"):
        plots._figures_for("main job", "x.md")


def test_every_benchmarks_placeholder_of_the_docs_names_a_heading_with_ratio_tables() -> None:
    wanted = sorted({m.group("spec") for page in (ROOT / "docs").rglob("*.md")
                     for line in page.read_text(encoding="utf-8").splitlines()
                     if (m := plots.PLACEHOLDER.match(line)) and m.group("spec").startswith("benchmarks")})
    assert wanted
    for spec in wanted:
        match = plots.SPEC_BENCHMARKS.match(spec)
        assert match, f"malformed placeholder <!-- plot: {spec} -->"
        figure = plots.benchmark_figure(match.group("heading"), match.group("axis"), "docs")
        assert "issue" not in figure.alt.lower(), figure.alt


def test_doc_comments_document_a_run_of_assignments_and_roles_become_code() -> None:
    pytest.importorskip("griffe")
    comments = _load("doc_comments")
    lines = ["x = 0", "", "#: tensorpack's older names", "A = B", "C = D", "", "E = 1",
             "P = namedtuple('P', ['s'])", "P.__doc__ = 'A point.'"]
    assert comments.doc_comment(lines, 4) == "tensorpack's older names"
    assert comments.doc_comment(lines, 5) == "tensorpack's older names"
    assert comments.doc_comment(lines, 7) is None
    assert comments.doc_assignment(lines, "P", 8) == "A point."
    text = "a :class:`~trainstack.loop.TrainLoop`, :func:`trainstack.towers.launch_train_with_config`"
    assert comments.plain_roles(text) == "a `TrainLoop`, `trainstack.towers.launch_train_with_config`"
    assert not re.search(r":\w+:`", comments.plain_roles(text))


def test_the_trainers_diagram_is_drawn_at_build_time_and_needs_no_script() -> None:
    """The Trainers page's diagram is an SVG the build draws (no mermaid script from a CDN)."""
    page = (ROOT / "docs" / "tutorials" / "trainers.md").read_text(encoding="utf-8")
    assert "```mermaid" not in page
    assert any((m := plots.PLACEHOLDER.match(line)) and m.group("spec") == "towers" for line in page.splitlines())
    figure = plots._figures_for("towers", "tutorials/trainers.md")[0]
    assert figure.src_uri == "assets/plots/towers.svg" and figure.svg.lstrip().startswith(b"<?xml")
    assert b"<script" not in figure.svg and b"<image" not in figure.svg
    assert "tower0 on device 0" in figure.alt and "batch s·K+1" in figure.alt


def test_no_page_needs_a_diagram_script_from_the_network() -> None:
    """No page has a mermaid block and the site configures no mermaid fence: Material loads
    mermaid's script from a CDN, so such a diagram is raw text offline."""
    pages = sorted((ROOT / "docs").rglob("*.md"))
    assert pages
    assert [str(p.relative_to(ROOT)) for p in pages if "```mermaid" in p.read_text(encoding="utf-8")] == []
    assert "mermaid" not in (ROOT / "mkdocs.yml").read_text(encoding="utf-8").split("# no mermaid")[0]


api_order = _load("api_order")


def test_a_marked_directive_gets_its_members_list_first_names_first_aliases_last() -> None:
    page = "Intro.\n\n<!-- api-first: DataFromList, BatchData -->\n::: trainstack.dataflow\n\n::: trainstack.dataflow.viz\n"
    out = api_order.order_directives(page, "docs/api/x.md").split("\n")
    assert out[:4] == ["Intro.", "", "::: trainstack.dataflow", "    options:"]
    members = out[4].strip().removeprefix("members: [").removesuffix("]").split(", ")
    import trainstack.dataflow as df
    assert members[:2] == ["DataFromList", "BatchData"]
    assert sorted(members) == sorted(df.__all__)  # every public name, once
    assert members[-1] in ("PrefetchData", "PrefetchDataZMQ", "MultiProcessPrefetchData", "MultiProcessMapDataZMQ",
                           "MultiProcessMapAndBatchDataZMQ", "MultiThreadPrefetchData")  # an alias, last
    assert out[5:] == ["      group_by_category: false", "", "::: trainstack.dataflow.viz", ""]


@pytest.mark.parametrize("page, message", [
    ("<!-- api-first: NoSuchName -->\n::: trainstack.loop\n", "does not export"),
    ("<!-- api-first: Trainer -->\n\n::: trainstack.loop\n", "right above a `::: module` line"),
    ("<!-- api-first: Trainer -->\n::: trainstack.loop\n    options:\n      members: false\n", "has options"),
])
def test_a_wrong_marker_fails_the_build_naming_the_page(page: str, message: str) -> None:
    with pytest.raises(plots.PluginError, match=re.escape(message)):
        api_order.order_directives(page, "docs/api/x.md")


def test_every_layer_page_opens_with_its_main_names_and_keeps_every_name() -> None:
    marked = {}
    for page in sorted((ROOT / "docs" / "api").glob("*.md")):
        lines = page.read_text(encoding="utf-8").splitlines()
        for line, following in zip(lines, lines[1:]):
            if (m := api_order.MARKER.match(line)) and (d := api_order.DIRECTIVE.match(following)):
                marked[d["module"]] = [n.strip() for n in m["names"].split(",")]
    layers = sorted(p.parent.name for p in (ROOT / "packages").glob("*/pyproject.toml"))
    assert set(marked) == {f"trainstack.{layer}" for layer in layers if layer != "tensorpack"}
    assert marked["trainstack.towers"][:4] == ["ModelDesc", "TrainConfig", "launch_train_with_config", "SimpleTrainer"]
    for module, first in marked.items():
        members = api_order.member_order(module, first)
        public = importlib.import_module(module).__all__
        assert sorted(members) == sorted(public), module
        aliases = [n for n in members if api_order.is_alias(importlib.import_module(module), n)]
        assert members[len(members) - len(aliases):] == aliases, module  # aliases at the end
