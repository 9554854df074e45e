"""Each layer serves its public names on first use (trainstack.loop.lazy_exports): every name of
its ``__all__`` resolves, and a program that trains a model imports none of the parts it does
not use."""
from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

LAYERS = ["trainstack.dataflow", "trainstack.callbacks", "trainstack.inputs", "trainstack.towers",
          "trainstack.towers.trainers", "trainstack.towers.predict", "trainstack.towers.session"]


@pytest.mark.parametrize("name", LAYERS)
def test_every_public_name_of_a_lazy_layer_resolves_to_what_its_import_line_names(name):
    module = importlib.import_module(name)
    for public in module.__all__:
        value = getattr(module, public)
        assert value is not None, f"{name}.{public}"
        assert public in vars(module), f"{name}.{public} is not kept after its first use"
    assert set(module.__all__) <= set(dir(module))
    with pytest.raises(AttributeError, match=rf"module '{name}' has no attribute 'NoSuchName'"):
        module.NoSuchName  # noqa: B018


def test_training_a_model_imports_none_of_the_parts_it_does_not_use():
    code = ("import sys\n"
            "from trainstack.inputs import TFDatasetInput\n"
            "from trainstack.towers import ModelDesc, SimpleTrainer, TrainConfig, launch_train_with_config\n"
            "print(' '.join(sorted(m for m in sys.modules if m.startswith('trainstack.'))))\n")
    loaded = set(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                check=True).stdout.split())
    assert "trainstack.towers.trainers.simple" in loaded and "trainstack.inputs.dataset" in loaded
    unused = {"trainstack.dataflow.imgaug", "trainstack.dataflow.dataset", "trainstack.dataflow.format",
              "trainstack.inputs.remote", "trainstack.inputs.remote_server", "trainstack.towers.predict.export",
              "trainstack.towers.trainers.replicated", "trainstack.towers.trainers.async_"}
    assert not unused & loaded, sorted(unused & loaded)


def test_lazy_exports_serves_the_names_imported_under_type_checking(tmp_path, monkeypatch):
    package = tmp_path / "lazy_pkg"
    package.mkdir()
    (package / "__init__.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "from trainstack.loop import lazy_exports\n"
        "if TYPE_CHECKING:\n"
        "    from . import sub\n"
        "    from .mod import value as renamed\n"
        "__all__ = ['renamed', 'sub']\n"
        "__getattr__, __dir__ = lazy_exports(__name__)\n")
    (package / "mod.py").write_text("import lazy_pkg\nlazy_pkg.loaded = True\nvalue = 42\n")
    (package / "sub.py").write_text("x = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import lazy_pkg  # noqa: PLC0415

    assert "loaded" not in vars(lazy_pkg)
    assert lazy_pkg.renamed == 42 and lazy_pkg.loaded
    assert lazy_pkg.sub.x == 1
    assert {"renamed", "sub"} <= set(dir(lazy_pkg))
    monkeypatch.delitem(sys.modules, "lazy_pkg")
    for mod in ("lazy_pkg.mod", "lazy_pkg.sub"):
        monkeypatch.delitem(sys.modules, mod)


def test_lazy_exports_refuses_a_line_it_cannot_serve(tmp_path, monkeypatch):
    package = tmp_path / "bad_pkg"
    package.mkdir()
    (package / "__init__.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "from trainstack.loop import lazy_exports\n"
        "if TYPE_CHECKING:\n"
        "    import json\n"
        "__getattr__, __dir__ = lazy_exports(__name__)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import bad_pkg  # noqa: PLC0415

    with pytest.raises(ImportError, match=r"line 4: only 'from \.\.\. import \.\.\.' lines"):
        bad_pkg.json  # noqa: B018
    monkeypatch.delitem(sys.modules, "bad_pkg")
