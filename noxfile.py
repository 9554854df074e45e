"""The test matrix: every test runs once, against the installed wheels. `nox -l` lists the
sessions; `nox -s towers` runs one (the `wheels` session first, which it requires).

- `typecheck` runs mypy over every package's sources (pyproject.toml; strict on loop, dataflow);
- `layering` runs import-linter's contracts (.importlinter) over the layers' sources,
  without the meta-package;
- `wheels` builds every distribution's wheel once, into .nox/built-wheels;
- one session per layer installs that layer and the layers it depends on **from those
  wheels** (trainstack's own distributions with no index, which proves the packaging and the
  version pins; their third-party dependencies from the index) and runs tests/<layer>/ from
  outside the source tree, so only what was installed is imported (an upward import fails
  with ModuleNotFoundError);
- `parity` runs tests/parity/, the differential suite: the same pipelines through tensorpack
  0.11's `tensorpack.dataflow` (no TensorFlow installed) and trainstack-dataflow's wheel;
- `bench` (not run by default) runs a benchmark script against the wheels:
  `nox -s bench -- dataflow_compare.py --rounds 5`;
- `all` installs everything, the meta-package too, and runs the tests at the top of tests/
  (those that need the meta-package);
- `horovod` builds Horovod once per machine (scripts/install_horovod.py, cached in
  ~/.cache/trainstack) and runs tests/distributed/test_horovod*.py;
- `ray` installs trainstack-distributed with its `ray` extra (Ray Train) and runs
  tests/distributed/test_ray*.py (a local Ray, `ray.init(num_cpus=2)`, 2 workers).

Which session runs a test file follows from its folder (`session_of`); the noxfile refuses to
load when a test file belongs to no session. At the end of a run a table gives each session's
outcome and time in seconds (nox's own summary rounds to minutes). Arguments after `--` go to
pytest; test paths among them (`tests/towers/test_trainer.py`) replace the session's own files,
each session taking its own.
"""
from __future__ import annotations

import atexit
import functools
import shutil
import sys
import time
import tomllib
from collections.abc import Callable
from pathlib import Path

import nox
from packaging.requirements import Requirement  # nox depends on packaging

ROOT = Path(__file__).parent
TESTS = ROOT / "tests"
WHEELS = ROOT / ".nox" / "built-wheels"  # not .nox/wheels: that is the `wheels` session's virtualenv
# bottom to top; each layer depends on those before it, except for the layers in BESIDE
LAYERS = ["loop", "dataflow", "callbacks", "inputs", "towers", "distributed", "tensorpack"]
# layer -> layers before it in LAYERS that it does not need: callbacks does not use dataflow
# (dataflow, NumPy and msgpack but no TensorFlow, sits on loop for its argument checks,
# trainstack.loop.checks); inputs and the layers above it use both
BESIDE = {"callbacks": {"dataflow"}}
TEST_TOOLS = ["pytest>=8", "pytest-xdist>=3"]
# third-party packages only the tests need, per layer
# (tensorpack 0.11, a pure-Python wheel, for tests/towers/test_tensorpack_dataflow.py: its own
# DataFlows train through trainstack's inputs; that test skips without it)
# (hypothesis for the fuzz tests of the codec, tests/dataflow, and of the remote input, tests/inputs)
TEST_EXTRAS = {"dataflow": ["hypothesis>=6", "opencv-python-headless>=4.8", "lmdb>=1.4", "h5py>=3.8",
                            "pyzmq>=25", "scipy>=1.10"],  # scipy: SVHNDigit/BSDS500's .mat files
               "callbacks": ["tensorboard"], "inputs": ["hypothesis>=6"],
               "towers": ["scikit-learn>=1.3", "tensorpack==0.11"],
               "distributed": ["pyyaml>=6"],  # tests/distributed/test_cluster_examples.py parses the manifests
               # tensorpack 0.11 beside trainstack.tensorpack: the oracle for its module tree (its
               # dataflow and utils import without TF1); matplotlib: CAM-resnet.py's intensity_to_rgb
               "tensorpack": ["tensorpack==0.11", "matplotlib>=3.5"]}
META = "trainstack"  # the meta-package's distribution, at the root


def dist(layer: str) -> str:
    return f"trainstack-{layer}"


# distribution -> its source folder
SOURCES = {**{dist(layer): ROOT / "packages" / layer for layer in LAYERS}, META: ROOT}

nox.needs_version = ">=2026.10"  # sessions' `requires`, and the summary with each session's time
nox.options.sessions = ["lint", "typecheck", "layering", "wheels", *LAYERS, "parity", "all", "docs", "horovod", "ray"]
RUFF = "ruff==0.17.6"  # pinned: a new ruff release brings new findings, added on purpose
# the `docs` session's tools, pinned: a new release of a theme or a plugin changes the site or
# brings new warnings (which --strict turns into errors), added on purpose
DOCS_TOOLS = ["mkdocs==1.6.1", "mkdocs-material==9.8.2", "mkdocstrings[python]==1.0.8", "mkdocstrings-python==2.0.11",
              "matplotlib==3.11.2", "sybil==10.1.0"]
MYPY = "mypy==2.4.1"  # pinned for the same reason
nox.options.reuse_existing_virtualenvs = True


# --- which session runs which test file -------------------------------------------------------

def session_of(test_file: Path) -> str | None:
    """The session that runs `test_file` (a tests/**/test_*.py), or None if no session does."""
    parts = test_file.relative_to(TESTS).parts
    if len(parts) == 1:
        return "layering" if parts[0] == "test_layering.py" else "all"
    if len(parts) == 2 and parts[0] in ("parity", "docs"):
        return parts[0]
    if len(parts) == 2 and parts[0] in LAYERS:
        if parts[0] == "distributed" and parts[1].startswith("test_horovod"):
            return "horovod"
        if parts[0] == "distributed" and parts[1].startswith("test_ray"):
            return "ray"
        return parts[0]
    return None  # a folder that is not a layer's, or a sub-folder: named nowhere


def test_files(session_name: str) -> list[str]:
    return [str(f) for f in sorted(TESTS.rglob("test_*.py")) if session_of(f) == session_name]


_orphans = [str(f.relative_to(ROOT)) for f in sorted(TESTS.rglob("test_*.py")) if session_of(f) is None]
if _orphans:
    raise SystemExit(f"noxfile.py: no session runs {', '.join(_orphans)}; put the file in tests/<layer>/ "
                     f"(one of {', '.join(LAYERS)}) or at the top of tests/, or extend session_of()")


# --- the table of session times printed at the end of a run ------------------------------------

_TIMES: dict[str, tuple[str, float]] = {}
_CLOCK = {"start": time.monotonic(), "last": time.monotonic()}


def timed(func: Callable[[nox.Session], None]) -> Callable[[nox.Session], None]:
    """Record the session's outcome and its wall time since the previous session ended (so that
    creating its virtualenv counts too)."""
    @functools.wraps(func)
    def wrapper(session: nox.Session) -> None:
        outcome = "failed"
        try:
            func(session)
            outcome = "passed"
        except BaseException as exc:
            if type(exc).__name__ == "_SessionSkip":  # session.skip()
                outcome = "skipped"
            raise
        finally:
            now = time.monotonic()
            _TIMES[session.name] = (outcome, now - _CLOCK["last"])
            _CLOCK["last"] = now
    return wrapper


@atexit.register
def _print_times() -> None:
    if not _TIMES:
        return
    rows = [*((name, outcome, s) for name, (outcome, s) in _TIMES.items()),
            ("total", "", time.monotonic() - _CLOCK["start"])]
    width = max(len(row[0]) for row in rows)
    print("\nsession times (wall clock, virtualenv set-up included):", file=sys.stderr)
    for name, outcome, seconds in rows:
        print(f"  {name:<{width}}  {outcome:<7}  {int(seconds // 60):3d}:{int(seconds % 60):02d}", file=sys.stderr)


# --- installing from the wheels ---------------------------------------------------------------

def stack(layer: str) -> list[str]:
    """`layer` and the layers it depends on, bottom first."""
    return [x for x in LAYERS[: LAYERS.index(layer) + 1] if x not in BESIDE.get(layer, ())]


def requirements(distribution: str) -> list[str]:
    """The third-party requirements of `distribution` and of the trainstack distributions it needs,
    read from their pyproject.toml files."""
    found: list[str] = []
    with open(SOURCES[distribution] / "pyproject.toml", "rb") as f:
        for req in tomllib.load(f)["project"].get("dependencies", []):
            name = Requirement(req).name
            found += requirements(name) if name in SOURCES else [req]
    return list(dict.fromkeys(found))


def install_wheels(session: nox.Session, *distributions: str) -> None:
    """Install `distributions` from .nox/built-wheels with no index; their third-party requirements
    first, from the index."""
    if not any(WHEELS.glob("*.whl")):
        session.error(f"no wheels in {WHEELS}: run `nox -s wheels` first")
    third_party = list(dict.fromkeys(r for d in distributions for r in requirements(d)))
    if third_party:
        session.install(*third_party)
    # a reused virtualenv holds the previous run's wheels under the same version numbers
    session.run("python", "-m", "pip", "uninstall", "-y", "-q", *SOURCES, silent=True)
    session.install("--no-index", "--find-links", str(WHEELS), *distributions)


def pytest_args(session: nox.Session, files: list[str]) -> list[str]:
    """pytest's arguments: `files` and the arguments after `--`. Test paths among those (relative
    to the repository) replace `files`; each session takes those of its own files (and folders),
    so `nox -s towers distributed -- <a towers file> <a distributed file>` runs each file in its
    session, and a session given none of its own is skipped."""
    args, paths = [], []
    for arg in session.posargs:
        path = ROOT / arg.split("::")[0]
        if arg.startswith("tests") and path.exists():
            if path.is_dir() or session_of(path) == session.name:
                paths.append(str(ROOT / arg))
        else:
            args.append(arg)
    if len(args) < len(session.posargs) and not paths:
        session.skip("none of the test paths given are this session's")
    return [*(paths or files), *args]


def pytest(session: nox.Session, module: str, files: list[str]) -> None:
    """pytest -n auto (see `pytest_args`), run from the session's temporary folder so that
    trainstack is imported from site-packages, never from the source tree (checked on `module`)."""
    args = pytest_args(session, files)
    session.chdir(session.create_tmp())
    session.run("python", "-c", f"import {module} as m; "
                "assert 'site-packages' in m.__file__, f'imported from {m.__file__}, not the wheel'")
    session.run("pytest", "-n", "auto", "-c", str(ROOT / "pyproject.toml"), "--rootdir", str(ROOT), *args)


# --- the sessions -----------------------------------------------------------------------------

@nox.session
@timed
def lint(session: nox.Session) -> None:
    """ruff's checks (pyflakes, import order, bugbear, pyupgrade; configured in pyproject.toml) over
    the whole repository. Nothing is reformatted."""
    session.install(RUFF)
    session.run("ruff", "check", *(session.posargs or ["."]))


@nox.session
@timed
def layering(session: nox.Session) -> None:
    """import-linter's layers contract over the layers' sources (the meta-package is not installed)."""
    session.install("import-linter>=2.0", *TEST_TOOLS)
    session.install("--no-deps", *[arg for layer in LAYERS for arg in ("-e", f"packages/{layer}")])
    session.run("pytest", *pytest_args(session, test_files("layering")))


@nox.session(reuse_venv=True)
@timed
def wheels(session: nox.Session) -> None:
    """Build every distribution's wheel (the seven layers and the meta-package) into .nox/built-wheels."""
    session.install("hatchling>=1.21")
    shutil.rmtree(WHEELS, ignore_errors=True)
    session.run("python", "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                "--wheel-dir", str(WHEELS), *map(str, SOURCES.values()))
    session.log("built " + ", ".join(sorted(p.name for p in WHEELS.glob("*.whl"))))


def _layer_session(layer: str) -> None:
    @nox.session(name=layer, requires=["wheels"])
    @timed
    def session_for_layer(session: nox.Session) -> None:
        files = test_files(layer)
        if not files:
            session.skip(f"tests/{layer}/ has no tests yet")
        below = stack(layer)
        session.install(*TEST_TOOLS, *dict.fromkeys(x for name in below for x in TEST_EXTRAS.get(name, [])))
        install_wheels(session, dist(layer))
        pytest(session, f"trainstack.{layer}", files)

    session_for_layer.__doc__ = (f"trainstack-{layer} and the layers it needs, from the wheels; "
                                 f"tests/{layer}/.")


for _layer in LAYERS:
    _layer_session(_layer)


@nox.session(requires=["wheels"])
@timed
def parity(session: nox.Session) -> None:
    """The differential suite, tests/parity/: the same pipelines through tensorpack 0.11's
    `tensorpack.dataflow` (which imports without TensorFlow; none is installed here) and through
    trainstack-dataflow with all its extras, comparing what a user observes."""
    files = test_files("parity")
    if not files:
        session.skip("tests/parity/ has no tests yet")
    # scikit-learn: tensorpack's SVMLightData reads through it (trainstack's needs none)
    session.install(*TEST_TOOLS, "tensorpack==0.11", "scikit-learn>=1.3", *TEST_EXTRAS["dataflow"])
    install_wheels(session, dist("dataflow"))
    session.run("python", "-c", "import tensorpack.dataflow, sys; "
                "assert 'tensorflow' not in sys.modules, 'tensorpack imported TensorFlow'")
    pytest(session, "trainstack.dataflow", files)


@nox.session(requires=["wheels"], default=False)
def bench(session: nox.Session) -> None:
    """Not part of the test run: `nox -s bench -- dataflow_compare.py --rounds 5` runs a script of
    benchmarks/ (default: dataflow_compare.py) against the wheels of every layer, with tensorpack
    0.11 and trainstack-dataflow's extras beside them."""
    session.install("tensorpack==0.11", *TEST_EXTRAS["dataflow"])
    install_wheels(session, dist("distributed"))
    script, *args = session.posargs or ["dataflow_compare.py"]
    session.run("python", str(ROOT / "benchmarks" / script), *args)


@nox.session(requires=["wheels"])
@timed
def all(session: nox.Session) -> None:  # noqa: A001 - the session's name
    """Every layer and the meta-package, from the wheels; the tests at the top of tests/."""
    session.install(*TEST_TOOLS, *dict.fromkeys(x for v in TEST_EXTRAS.values() for x in v))
    install_wheels(session, META)
    session.run("python", "-c", "import trainstack; print('trainstack exports', len(trainstack.__all__), 'names')")
    pytest(session, "trainstack", test_files("all"))


@nox.session(requires=["wheels"])
@timed
def horovod(session: nox.Session) -> None:
    """Horovod for this TensorFlow via scripts/install_horovod.py (built once, then reused from
    ~/.cache/trainstack/horovod), then tests/distributed/test_horovod*.py (which the
    `distributed` session does not run)."""
    session.install(*TEST_TOOLS)
    # the tensorpack layer too: test_horovod_sync_bn.py trains its BatchNorm(sync_statistics='horovod')
    install_wheels(session, dist("distributed"), dist("tensorpack"))
    session.run("python", str(ROOT / "scripts" / "install_horovod.py"))
    pytest(session, "trainstack.distributed", test_files("horovod"))


def optional_requirements(distribution: str, extra: str) -> list[str]:
    """The requirements of `distribution`'s optional extra `extra`, read from its pyproject.toml."""
    with open(SOURCES[distribution] / "pyproject.toml", "rb") as f:
        extras = tomllib.load(f)["project"].get("optional-dependencies", {})
    if extra not in extras:
        raise SystemExit(f"noxfile.py: {distribution} has no extra {extra!r} (it has {sorted(extras)})")
    return list(extras[extra])


@nox.session(requires=["wheels"])
@timed
def ray(session: nox.Session) -> None:
    """trainstack-distributed with its `ray` extra (Ray Train: its requirements from the index, the
    wheel with no index), then tests/distributed/test_ray*.py (which the `distributed` session does
    not run): one local Ray (`ray.init(num_cpus=2)`) training on 2 workers, twice."""
    session.install(*TEST_TOOLS, *optional_requirements(dist("distributed"), "ray"))
    install_wheels(session, dist("distributed"))
    # the extra's metadata in the wheel resolves against what is installed (nothing is fetched)
    session.install("--no-index", "--find-links", str(WHEELS), f"{dist('distributed')}[ray]")
    pytest(session, "trainstack.distributed", test_files("ray"))


@nox.session
@timed
def typecheck(session: nox.Session) -> None:
    """mypy over every package (configured in pyproject.toml): basic on all, strict on loop and
    dataflow. mypy reads the sources through its mypy_path, nothing of trainstack is installed;
    of the third-party packages only the no-TensorFlow layer's (NumPy's annotations matter),
    TensorFlow & co. count as untyped. Arguments after `--` go to mypy."""
    session.install(MYPY, *requirements(dist("dataflow")))
    session.run("mypy", *session.posargs)


@nox.session(requires=["wheels"])
@timed
def docs(session: nox.Session) -> None:
    """The documentation site (mkdocs.yml, docs/) built with --strict into site/, and tests/docs/:
    every Python code block of the docs and the READMEs run, every public name documented. The API
    reference is generated from the installed wheels' docstrings; the build runs the main job once
    for its figure (examples/digits_convnet.py, hence the `examples` extra), in about 30 s."""
    # the code blocks use what the tests use (the dataflow extras: LMDB, OpenCV, ...)
    session.install(*TEST_TOOLS, *DOCS_TOOLS, RUFF, *optional_requirements(META, "examples"),  # ruff: signatures
                    *dict.fromkeys(x for v in TEST_EXTRAS.values() for x in v))
    install_wheels(session, META)
    pytest(session, "trainstack", test_files("docs"))
    session.chdir(ROOT)
    session.run("mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"),
                "--site-dir", str(ROOT / "site"), env={"NO_MKDOCS_2_WARNING": "1"})
    session.log(f"built {ROOT / 'site'}; view it with `python3 -m http.server -d site 8000` and "
                "http://localhost:8000")
