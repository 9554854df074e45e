"""MkDocs hooks: the site's figures, drawn at build time from what the repository produces.

A page asks for a figure with a placeholder on a line of its own (outside code blocks):

- ``<!-- plot: main-job -->``: the main job, ``examples/digits_convnet.py``, is run once per build
  and its ``stats.jsonl`` plotted (training cost and validation error per epoch);
- ``<!-- plot: benchmarks "<heading>" axis="<what the ratios measure>" -->``: the first table with
  a ratio column under that heading of ``benchmarks/README.md`` (the section's result; the tables
  after it, earlier runs and goals, stay text), one bar chart answering one question: a group of
  bars per row, one bar per ratio column, named by the column's header in the legend, and the
  ratios' meaning on the axis. The chart has no title: the page's text says what it shows;
- ``<!-- plot: towers -->``: the diagram of how the input, the towers, the gradients and the
  variables of a data-parallel step connect (drawn here, so that the site needs no diagram script
  from the network).

Figures are SVG files added to the build (``assets/plots/``), so MkDocs checks the links to them and
copies them into the site; no image is stored in the repository. An unknown placeholder, an unknown
heading or a failed main job fails the build with an error naming the page and what was expected.
"""
from __future__ import annotations

import io
import json
import logging
import math
import posixpath
import re
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # before pyplot: no display at build time
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator  # noqa: E402
from mkdocs.exceptions import PluginError  # noqa: E402
from mkdocs.structure.files import File, Files  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
MAIN_JOB = ROOT / "examples" / "digits_convnet.py"
BENCHMARKS = ROOT / "benchmarks" / "README.md"
PLOTS_DIR = "assets/plots"  # inside the site, beside the pages
MAIN_JOB_TIMEOUT_S = 600
log = logging.getLogger("mkdocs.hooks.plots")

PLACEHOLDER = re.compile(r"^[ \t]*<!--\s*plot:\s*(?P<spec>.*?)\s*-->[ \t]*$")
SPEC_MAIN_JOB = re.compile(r"^main-job$")
SPEC_TOWERS = re.compile(r"^towers$")
SPEC_BENCHMARKS = re.compile(r'^benchmarks\s+"(?P<heading>[^"]+)"\s+axis="(?P<axis>[^"]+)"$')
KNOWN = ('`<!-- plot: main-job -->`, `<!-- plot: towers -->` or `<!-- plot: benchmarks "<a heading of benchmarks/README.md>" '
         'axis="<what the ratios measure>" -->`')
FENCE = re.compile(r"^[ \t]*(?P<fence>`{3,}|~{3,})")
HEADING = re.compile(r"^(?P<level>#{1,6})[ \t]+(?P<text>.+?)[ \t]*#*[ \t]*$")
# a ratio in a cell: "0.47x", "1.000x", ">= 1.0x"; not the "28" of "28x28"
RATIO = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)x(?![\w.])")
NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)(?![\w.])")


@dataclass(frozen=True)
class Figure:
    """One rendered figure: where it goes in the site and how a page shows it."""

    src_uri: str  # relative to docs_dir, posix
    alt: str
    svg: bytes


# what this build has drawn, placeholder spec -> its figures; emptied when a build starts
_drawn: dict[str, list[Figure]] = {}


# --- MkDocs events ------------------------------------------------------------------------------

def on_pre_build(config: Any) -> None:
    """A new build (also each rebuild of `mkdocs serve`) runs the main job again."""
    _drawn.clear()


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    """Replace each placeholder of the page with its figures (drawn once per build)."""
    out: list[str] = []
    fence: str | None = None
    for line in markdown.split("\n"):
        opening = FENCE.match(line)
        if opening:
            mark = opening.group("fence")
            if fence is None:
                fence = mark
            elif mark[0] == fence[0] and len(mark) >= len(fence) and not line.strip()[len(mark):].strip():
                fence = None
            out.append(line)
            continue
        match = None if fence else PLACEHOLDER.match(line)
        if match is None:
            out.append(line)
            continue
        figures = _figures_for(match.group("spec"), page.file.src_uri)
        page_dir = posixpath.dirname(page.file.src_uri)
        for figure in figures:
            if files.get_file_from_path(figure.src_uri) is None:
                files.append(File.generated(config, figure.src_uri, content=figure.svg))
            out.append(f"![{figure.alt}]({posixpath.relpath(figure.src_uri, page_dir or '.')})")
            out.append("")
    return "\n".join(out)


# --- placeholders -------------------------------------------------------------------------------

def _figures_for(spec: str, where: str) -> list[Figure]:
    if spec in _drawn:
        return _drawn[spec]
    if SPEC_MAIN_JOB.match(spec):
        figures = [main_job_figure()]
    elif SPEC_TOWERS.match(spec):
        figures = [towers_figure()]
    elif match := SPEC_BENCHMARKS.match(spec):
        figures = [benchmark_figure(match.group("heading"), match.group("axis"), where)]
    else:
        raise PluginError(f"docs/{where}: unknown placeholder <!-- plot: {spec} -->; expected {KNOWN}")
    _drawn[spec] = figures
    return figures


def _svg(fig: Any) -> bytes:
    buffer = io.BytesIO()
    # no date and a fixed hash salt: the same data gives the same file
    fig.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    return buffer.getvalue()


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "table"


matplotlib.rcParams["svg.hashsalt"] = "trainstack-docs"


# --- the main job -------------------------------------------------------------------------------

def run_main_job(logdir: Path) -> list[dict[str, Any]]:
    """Run examples/digits_convnet.py (its defaults: 20 epochs) into `logdir`; its stats.jsonl rows."""
    command = [sys.executable, str(MAIN_JOB), "--logdir", str(logdir)]
    start = time.perf_counter()
    try:
        proc = subprocess.run(command, cwd=logdir.parent, capture_output=True, text=True,
                              timeout=MAIN_JOB_TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        raise PluginError(f"plot main-job: {MAIN_JOB.name} ran past {MAIN_JOB_TIMEOUT_S} s") from exc
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-20:])
        raise PluginError(f"plot main-job: `{' '.join(command)}` exited with {proc.returncode}:\n{tail}")
    stats = logdir / "stats.jsonl"
    if not stats.is_file():
        raise PluginError(f"plot main-job: {MAIN_JOB.name} wrote no {stats}")
    rows = [json.loads(line) for line in stats.read_text().splitlines() if line.strip()]
    log.info("plot main-job: %s ran in %.1f s", MAIN_JOB.name, time.perf_counter() - start)
    return rows


def main_job_figure() -> Figure:
    with tempfile.TemporaryDirectory(prefix="trainstack-docs-") as tmp:
        rows = run_main_job(Path(tmp) / "train_log")
    per_epoch = {row["epoch_num"]: row for row in rows if "cost" in row and "validation_error" in row}
    if not per_epoch:
        raise PluginError("plot main-job: stats.jsonl has no epoch with both `cost` and `validation_error`")
    epochs = sorted(per_epoch)
    cost = [per_epoch[e]["cost"] for e in epochs]
    error = [per_epoch[e]["validation_error"] for e in epochs]

    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.4))
    left.plot(epochs, cost, marker="o", markersize=3)
    left.set(title="training cost (moving average)", xlabel="epoch", ylabel="cost", yscale="log")
    right.plot(epochs, error, marker="o", markersize=3, color="tab:red")
    right.set(title="validation error (500 images)", xlabel="epoch", ylabel="error", yscale="log")
    right.annotate(f"{error[-1]:.3f}", (epochs[-1], error[-1]), textcoords="offset points",
                   xytext=(-4, 8), ha="right")
    for ax in (left, right):
        ax.grid(True, which="both", alpha=0.3)
        ax.set_xticks(epochs if len(epochs) <= 10 else epochs[::2])
    count = f"{len(epochs)} epoch" + ("s" if len(epochs) > 1 else "")
    fig.suptitle(f"examples/digits_convnet.py, {count} (run when this site was built)")
    fig.tight_layout()
    alt = (f"Training cost and validation error per epoch of examples/digits_convnet.py "
           f"(final validation error {error[-1]:.3f})")
    return Figure(f"{PLOTS_DIR}/main-job.svg", alt, _svg(fig))


# --- the towers of a data-parallel step -------------------------------------------------------------

#: box name -> (x, y of its centre, width, its text), in the figure's units (13 x 4.2)
TOWERS_BOXES = {
    "dataflow": (0.9, 2.1, 1.5, "dataflow\nor tf.data"),
    "input": (3.2, 2.1, 1.8, "InputSource\nQueueInput +\nStagingInput"),
    "tower0": (6.0, 3.3, 2.0, "tower0 on device 0\nbuild_graph:\ncost, gradients"),
    "tower1": (6.0, 0.9, 2.0, "tower1 on device 1\nbuild_graph:\ncost, gradients"),
    "average": (8.9, 2.1, 2.3, "gradients averaged:\nall-reduce (replicated),\nor on the variable's device\n(parameter server)"),
    "apply": (11.8, 3.3, 2.2, "optimizer.apply_gradients\n(gradient processors\nfirst)"),
    "variables": (11.8, 0.9, 2.2, "variables:\na replica per device,\nor one copy"),
}
#: (from, to, label, dashed)
TOWERS_ARROWS = [
    ("dataflow", "input", "", False),
    ("input", "tower0", "batch s·K", False),
    ("input", "tower1", "batch s·K+1", False),
    ("tower0", "average", "", False),
    ("tower1", "average", "", False),
    ("average", "apply", "", False),
    ("apply", "variables", "", False),
    ("variables", "tower1", "read by the towers\nof the next step", True),
]
BOX_H = 1.0


def towers_figure() -> Figure:
    """The input, two towers, the averaged gradients and the variables of one step, with arrows."""
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch  # noqa: PLC0415

    fig, ax = plt.subplots(figsize=(12, 3.9))
    ax.set(xlim=(0, 13), ylim=(0.2, 4.0))
    ax.axis("off")
    patches = {}
    for name, (x, y, width, text) in TOWERS_BOXES.items():
        box = FancyBboxPatch((x - width / 2, y - BOX_H / 2), width, BOX_H, boxstyle="round,pad=0.04",
                             facecolor="#e8eef7" if name != "variables" else "#f4ecd8",
                             edgecolor="#41618c", linewidth=1.0)
        ax.add_patch(box)
        ax.text(x, y, text, ha="center", va="center", fontsize=9)
        patches[name] = box
    for start, end, label, dashed in TOWERS_ARROWS:
        arrow = FancyArrowPatch(posA=TOWERS_BOXES[start][:2], posB=TOWERS_BOXES[end][:2],
                                patchA=patches[start], patchB=patches[end], arrowstyle="-|>",
                                mutation_scale=12, linewidth=1.0, color="#333333",
                                linestyle="--" if dashed else "-", shrinkA=2, shrinkB=2)
        ax.add_patch(arrow)
        if label:
            (x0, y0), (x1, y1) = TOWERS_BOXES[start][:2], TOWERS_BOXES[end][:2]
            ax.text((x0 + x1) / 2, (y0 + y1) / 2 - (0.35 if dashed else 0.0), label, ha="center",
                    va="center", fontsize=8, style="italic",
                    bbox={"facecolor": "white", "edgecolor": "none", "pad": 1.0})
    fig.tight_layout()
    alt = ("Diagram of one data-parallel step: a dataflow or tf.data feeds the InputSource (QueueInput + "
           "StagingInput), which gives batch s·K to tower0 on device 0 and batch s·K+1 to tower1 on device "
           "1; each tower's build_graph computes its cost and gradients; the gradients are averaged "
           "(all-reduce, or on the variable's device) and applied by the optimizer to the variables, "
           "which the next step's towers read")
    return Figure(f"{PLOTS_DIR}/towers.svg", alt, _svg(fig))


# --- benchmark tables ---------------------------------------------------------------------------

@dataclass
class Table:
    header: list[str]
    rows: list[list[str]]


def _cells(line: str) -> list[str]:
    line = line.strip()
    if line.startswith("|"):
        line = line[1:]
    if line.endswith("|") and not line.endswith("\\|"):
        line = line[:-1]
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", line)]


def _is_separator(line: str) -> bool:
    return bool(re.fullmatch(r"\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*", line))


def sections(markdown: str) -> dict[str, tuple[int, list[str]]]:
    """heading text -> (its level, the lines under it down to the next heading of its level or
    above), code blocks left out of the heading search."""
    headings: list[tuple[int, int, str]] = []  # (line index, level, text)
    lines = markdown.split("\n")
    fence: str | None = None
    for i, line in enumerate(lines):
        opening = FENCE.match(line)
        if opening:
            mark = opening.group("fence")
            fence = mark if fence is None else (None if mark[0] == fence[0] else fence)
            continue
        if fence is None and (match := HEADING.match(line)):
            headings.append((i, len(match.group("level")), match.group("text")))
    found: dict[str, tuple[int, list[str]]] = {}
    for n, (i, level, text) in enumerate(headings):
        end = next((j for j, lv, _ in headings[n + 1:] if lv <= level), len(lines))
        found.setdefault(text, (level, lines[i + 1:end]))
    return found


def tables(lines: list[str]) -> list[Table]:
    """The pipe tables among `lines` (a header row, a separator row, body rows)."""
    found: list[Table] = []
    i = 0
    while i < len(lines) - 1:
        if lines[i].lstrip().startswith("|") and _is_separator(lines[i + 1]):
            header = _cells(lines[i])
            rows: list[list[str]] = []
            i += 2
            while i < len(lines) and lines[i].lstrip().startswith("|"):
                rows.append(_cells(lines[i]))
                i += 1
            found.append(Table(header, rows))
        else:
            i += 1
    return found


def _plain(text: str) -> str:
    """Markdown cell text without its emphasis and code marks."""
    return re.sub(r"[`*]", "", text).strip()


def ratio_columns(table: Table) -> dict[str, list[float]]:
    """The table's ratio columns, header -> one value per row (NaN where a cell has none).

    A column is a ratio column when its header says "ratio", or when at least half of its
    non-empty cells hold a ratio written ``<number>x``; a cell gives its first ratio (the first
    number in a "ratio" column whose cells have no ``x``)."""
    columns: dict[str, list[float]] = {}
    for j, name in enumerate(table.header[1:], start=1):
        cells = [row[j] if j < len(row) else "" for row in table.rows]
        filled = [c for c in cells if c and c not in ("—", "-")]
        with_x = [RATIO.search(c) for c in cells]
        if filled and sum(m is not None for m in with_x) * 2 >= len(filled):
            columns[_plain(name)] = [float(m.group(1)) if m else math.nan for m in with_x]
        elif "ratio" in name.lower() and filled:
            numbers = [NUMBER.search(c) for c in cells]
            columns[_plain(name)] = [float(m.group(1)) if m else math.nan for m in numbers]
    return columns


def _heading_matches(wanted: str, heading: str) -> bool:
    return wanted.strip() in (heading, _plain(heading))


def benchmark_figure(heading: str, axis: str, where: str, source: Path = BENCHMARKS) -> Figure:
    """The bar chart of the first table with a ratio column under `heading` of benchmarks/README.md,
    the ratios' meaning (`axis`) on its axis."""
    found = sections(source.read_text(encoding="utf-8"))
    matching = [text for text in found if _heading_matches(heading, text)]
    if not matching:
        names = "; ".join(f'"{text}"' for text in found)
        raise PluginError(f'docs/{where}: <!-- plot: benchmarks "{heading}" -->: no such heading in '
                          f"{source.relative_to(ROOT)}; its headings are {names}")
    title = _plain(matching[0])
    candidates = tables(found[matching[0]][1])
    charts = [(t, cols) for t in candidates if (cols := ratio_columns(t))]
    if not charts:
        raise PluginError(f'docs/{where}: <!-- plot: benchmarks "{heading}" -->: none of the '
                          f"{len(candidates)} tables under that heading has a ratio column "
                          f"(a header with 'ratio' or cells like '1.23x')")
    table, columns = charts[0]
    alt = (f"Bar chart: {axis}, for each {_plain(table.header[0])} "
           f"({', '.join(columns)}), from the table '{title}' of benchmarks/README.md")
    return Figure(f"{PLOTS_DIR}/benchmarks-{_slug(title)}.svg", alt, _svg(bar_chart(axis, table, columns)))


def bar_chart(axis: str, table: Table, columns: dict[str, list[float]]) -> Any:
    """Horizontal grouped bars: one group per row, one bar per ratio column (the legend, above the
    bars, names them), a dashed line at 1x; `axis` says what a ratio is. No title."""
    labels = ["\n".join(textwrap.wrap(_plain(row[0]), 42)) or "?" for row in table.rows]
    series = list(columns.items())
    values_all = [v for _, values in series for v in values if not math.isnan(v) and v > 0]
    height = 0.8 / len(series)
    fig, ax = plt.subplots(figsize=(9, 1.4 + 0.32 * len(labels) * max(1.0, len(series) * 0.7)))
    if values_all and max(values_all) / min(values_all) > 20:
        ax.set_xscale("log")  # a 17x next to a 0.1x: both readable
        ax.xaxis.set_major_locator(FixedLocator([0.1, 0.3, 1, 3, 10, 30, 100, 300, 1000]))
        ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}x"))
    for k, (name, values) in enumerate(series):
        ys = [i + (k - (len(series) - 1) / 2) * height for i in range(len(labels))]
        bars = ax.barh(ys, [0 if math.isnan(v) else v for v in values], height=height, label=name)
        for bar, value in zip(bars, values):
            if not math.isnan(value):
                ax.annotate(f"{value:.2f}x", (value, bar.get_y() + bar.get_height() / 2),
                            xytext=(3, 0), textcoords="offset points", va="center", fontsize=8)
    ax.axvline(1.0, color="black", linestyle="--", linewidth=0.8)
    low, high = ax.get_xlim()
    ax.set_xlim(low, high * (1.6 if ax.get_xscale() == "log" else 1.1))  # room for the labels
    ax.set_yticks(range(len(labels)), labels, fontsize=9)
    ax.invert_yaxis()  # the table's order, top down
    ax.set_xlabel(f"{axis} (dashed line: 1x)", fontsize=10)
    ax.legend(fontsize=10, loc="lower left", bbox_to_anchor=(0.0, 1.0), ncol=min(len(series), 3),
              frameon=False, borderaxespad=0.3)
    ax.grid(True, axis="x", alpha=0.3)
    fig.tight_layout()
    return fig


if __name__ == "__main__":  # draw a placeholder's figures into a folder, to look at them
    target = Path(sys.argv[2] if len(sys.argv) > 2 else ".")
    target.mkdir(parents=True, exist_ok=True)
    for figure in _figures_for(sys.argv[1], "command line"):
        (target / posixpath.basename(figure.src_uri)).write_bytes(figure.svg)
        print(target / posixpath.basename(figure.src_uri), figure.alt)
