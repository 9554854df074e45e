"""Every installed trainstack package carries PEP 561's ``py.typed`` marker, so that a type
checker run over a user's code reads trainstack's annotations instead of treating it as untyped.

``trainstack`` is one namespace over eight distributions: each layer's marker sits in its own
package directory (``trainstack/loop/py.typed``), the meta-package's in ``trainstack/``.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

LAYERS = ["loop", "dataflow", "callbacks", "inputs", "towers", "distributed", "tensorpack"]


def package_dirs(name: str) -> list[Path]:
    """The directories of package ``name``, found without importing it (no TensorFlow)."""
    spec = importlib.util.find_spec(name)
    assert spec is not None, f"{name} is not installed"
    assert spec.submodule_search_locations, f"{name} is a module, not a package"
    return [Path(p) for p in spec.submodule_search_locations]


@pytest.mark.parametrize("layer", LAYERS)
def test_each_layer_has_py_typed(layer):
    dirs = package_dirs(f"trainstack.{layer}")
    assert len(dirs) == 1, f"trainstack.{layer} found in several places: {dirs}"
    assert (dirs[0] / "py.typed").is_file(), f"no py.typed in {dirs[0]}"
    assert (dirs[0] / "__init__.py").is_file()  # the directory is the package, not a namespace portion


def test_meta_package_has_py_typed():
    spec = importlib.util.find_spec("trainstack")
    assert spec is not None
    if spec.origin in (None, "namespace"):
        pytest.skip("the meta-package is not installed (trainstack is a bare namespace)")
    meta_dir = Path(spec.origin).parent
    assert (meta_dir / "py.typed").is_file(), f"no py.typed in {meta_dir}"
