"""The test matrix. `nox -l` lists the sessions; `nox -s loop` runs one.

- one session per layer installs only that layer and the layers it depends on
  (those below it, but see BESIDE) and runs tests/<layer>/ (an upward import
  fails there with ModuleNotFoundError);
- `all` installs everything (the meta-package too) and runs every test;
- `wheels` builds every distribution's wheel and installs them from the
  wheels with no index, proving the version pins between layers resolve;
- `layering` runs import-linter's contracts (.importlinter) over the layers,
  without the meta-package.

Sessions use pip's cache of this machine (~/.cache/pip), so TensorFlow is
downloaded once.
"""
from __future__ import annotations

from pathlib import Path

import nox

ROOT = Path(__file__).parent
# bottom to top; each layer depends on those before it, except for the layers in BESIDE
LAYERS = ["loop", "dataflow", "callbacks", "inputs", "towers", "distributed"]
# layer -> layers before it in LAYERS that it does not need: dataflow (NumPy and msgpack, no
# TensorFlow) sits beside loop at the bottom; inputs and the layers above it use both
BESIDE = {"dataflow": {"loop"}, "callbacks": {"dataflow"}}
TEST_TOOLS = ["pytest>=8", "pytest-xdist>=3"]
# third-party packages only the tests need, per layer
# (tensorpack 0.11, a pure-Python wheel, for tests/towers/test_tensorpack_dataflow.py: its own
# DataFlows train through trainstack's inputs; that test skips without it)
# (hypothesis for the fuzz tests of the codec, tests/dataflow, and of the remote input, tests/inputs)
TEST_EXTRAS = {"dataflow": ["hypothesis>=6"], "callbacks": ["tensorboard"], "inputs": ["hypothesis>=6"],
               "towers": ["scikit-learn>=1.3", "tensorpack==0.11"]}

# `horovod` builds Horovod once per machine (~3-7 min on 2 cores, cached in ~/.cache/trainstack),
# then runs tests/distributed with it; the other sessions skip the Horovod tests.
nox.options.sessions = ["layering", *LAYERS, "all", "wheels", "horovod"]
nox.options.reuse_existing_virtualenvs = True


def editable(*layers: str) -> list[str]:
    """`-e packages/<layer>` for each layer: one pip call resolves the pins locally."""
    return [arg for layer in layers for arg in ("-e", f"packages/{layer}")]


def stack(layer: str) -> list[str]:
    """`layer` and the layers it depends on, bottom first."""
    return [x for x in LAYERS[: LAYERS.index(layer) + 1] if x not in BESIDE.get(layer, ())]


def has_tests(layer: str) -> bool:
    return any((ROOT / "tests" / layer).glob("test_*.py"))


def pytest(session: nox.Session, *paths: str) -> None:
    session.run("pytest", "-n", "auto", *paths, *session.posargs)


def _layer_session(layer: str) -> None:
    @nox.session(name=layer)
    def session_for_layer(session: nox.Session) -> None:
        if not has_tests(layer):
            session.skip(f"tests/{layer}/ has no tests yet (the layer is a placeholder)")
        below = stack(layer)
        extras = [x for name in below for x in TEST_EXTRAS.get(name, [])]
        session.install(*TEST_TOOLS, *extras, *editable(*below))
        pytest(session, f"tests/{layer}")

    session_for_layer.__doc__ = f"Install trainstack-{layer} and the layers it needs only; run tests/{layer}/."


for _layer in LAYERS:
    _layer_session(_layer)


@nox.session
def all(session: nox.Session) -> None:  # noqa: A001 - the session's name
    """Everything installed, the meta-package too; every test."""
    extras = [x for v in TEST_EXTRAS.values() for x in v]
    session.install(*TEST_TOOLS, *extras, *editable(*LAYERS), "-e", ".")
    session.run("python", "-c", "import trainstack; print('trainstack exports', len(trainstack.__all__), 'names')")
    pytest(session, "tests")


@nox.session(reuse_venv=False)  # a reused venv would keep an older wheel of the same version
def wheels(session: nox.Session) -> None:
    """Build all wheels, install them with no index, run the tests against them."""
    dist = Path(session.create_tmp()) / "dist"
    session.run("python", "-c", f"import shutil; shutil.rmtree({str(dist)!r}, ignore_errors=True)")
    for path in [*(f"packages/{x}" for x in LAYERS), "."]:
        session.run("python", "-m", "pip", "wheel", "--no-deps", "--wheel-dir", str(dist), path)
    # third-party dependencies come from the index; trainstack's own from the wheels only
    session.install(*TEST_TOOLS, *[x for v in TEST_EXTRAS.values() for x in v],
                    "tensorflow>=2.16", "tqdm>=4.60", "msgpack>=1.0", "numpy>=1.22")
    session.install("--no-index", "--find-links", str(dist), "trainstack")
    session.run("python", "-m", "pip", "list")
    # run from a folder outside the source tree so that only the installed wheels are imported
    session.chdir(session.create_tmp())
    session.run("python", "-c", "import trainstack, trainstack.loop, trainstack.callbacks; "
                "import trainstack.loop as l; assert 'site-packages' in l.__file__, l.__file__")
    session.run("pytest", "-n", "auto", "-c", str(ROOT / "pyproject.toml"), "--rootdir", str(ROOT),
                str(ROOT / "tests"), *session.posargs)


@nox.session
def layering(session: nox.Session) -> None:
    """import-linter's layers contract over the layers (the meta-package is not installed)."""
    session.install("import-linter>=2.0", *TEST_TOOLS)
    session.install("--no-deps", *editable(*LAYERS))
    session.run("pytest", "tests/test_layering.py", *session.posargs)


@nox.session
def horovod(session: nox.Session) -> None:
    """Horovod for this TensorFlow via scripts/install_horovod.py (built once, then reused from
    ~/.cache/trainstack/horovod), then the Horovod tests (the rest of tests/distributed runs in the
    `distributed` session, where these skip)."""
    session.install(*TEST_TOOLS, *editable(*LAYERS))
    session.run("python", "scripts/install_horovod.py")
    tests = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests" / "distributed").glob("test_horovod*.py"))
    pytest(session, *tests)
