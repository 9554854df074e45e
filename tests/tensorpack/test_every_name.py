"""Every public name of tensorpack 0.11, walked: each module's ``__all__`` (read from tensorpack's source
with ``ast``, see ``test_module_tree.tensorpack_names``) imports from its path under ``trainstack.tensorpack``,
or is in ``_replaced.REPLACED`` and its import or call raises the documented error; the counts in
``packages/tensorpack/README.md`` are the ones this walk finds."""
from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest
from test_module_tree import MIRRORED, tensorpack_names

from trainstack.tensorpack import _replaced

README = Path(__file__).resolve().parents[2] / "packages" / "tensorpack" / "README.md"


def walk() -> list[tuple[str, str]]:
    """Every (module, name) of the mirrored tensorpack modules, a package's star-imported names included."""
    return sorted((module, name) for module in MIRRORED for name in tensorpack_names(module))


def definitions() -> set[tuple[str, str]]:
    """Each public name once, at the module that defines it (``tensorpack.callbacks.saver.ModelSaver``, not
    again as ``tensorpack.callbacks.ModelSaver``)."""
    out = set()
    for module in MIRRORED:
        names = tensorpack_names(module)
        for sub in _replaced.EXPOSES.get(module, ()):
            names -= tensorpack_names(sub)
        out |= {(module, n) for n in names}
    return out


WALK = walk()


def test_the_walk_covers_every_module_and_name():
    assert {m for m, _ in WALK} == {m for m in MIRRORED if tensorpack_names(m)} and len(MIRRORED) >= 120
    assert len(WALK) > 900  # packages repeat their modules' names, as tensorpack's star imports do


@pytest.mark.parametrize("module", MIRRORED)
def test_every_name_imports_or_raises_the_documented_error(module):
    for name in sorted(tensorpack_names(module)):
        key = _replaced.find(module, name)
        statement = f"from trainstack.{module} import {name}"
        if key in _replaced.IMPORT_ERRORS:
            with pytest.raises(_replaced.NotProvidedError, match=re.escape(_replaced.REPLACED[key])):
                exec(statement, {})
            continue
        namespace: dict = {}
        exec(statement, namespace)
        obj = namespace[name]
        if key is None:
            assert not _replaced.is_stand_in(obj), f"{module}.{name}"
            continue
        assert obj is _replaced.stand_in(key)
        call = f"{name}()"
        with pytest.raises(_replaced.ReplacedCallError) as info:
            obj()
        text = str(info.value)
        assert text.startswith(f"{call} is tensorpack's {key}") and _replaced.REPLACED[key] in text, text


def test_no_entry_is_left_without_a_reason():
    """Each entry says why and what to use; "not provided yet" only for IMPORT_ERRORS (none now)."""
    for key, text in _replaced.REPLACED.items():
        assert text.startswith(("replaced by", "renamed", "not provided")), key
        if key not in _replaced.IMPORT_ERRORS:
            assert text != _replaced.NOT_YET, key
    assert {k for k, v in _replaced.REPLACED.items() if v == _replaced.NOT_YET} == set(_replaced.IMPORT_ERRORS)


def test_the_readme_counts_are_the_walks():
    defined = definitions()
    listed = {tuple(k.rsplit(".", 1)) for k in _replaced.REPLACED} & defined
    not_yet = {tuple(k.rsplit(".", 1)) for k in _replaced.IMPORT_ERRORS}
    text = " ".join(README.read_text().split())
    expected = (f"Of the {len(defined)} public names of tensorpack 0.11's modules, {len(defined - listed)} are "
                f"provided and {len(listed)} listed")
    assert expected in text, expected
    assert (f"{len(not_yet)} of them not provided yet" if not_yet else "none of them left not provided yet") in text
    assert len(MIRRORED) >= 120 and f"{len(MIRRORED)} modules" in text


@pytest.mark.parametrize("package", ["tensorpack", "tensorpack.callbacks", "tensorpack.tfutils", "tensorpack.utils",
                                     "tensorpack.dataflow", "tensorpack.models", "tensorpack.train",
                                     "tensorpack.predict", "tensorpack.input_source", "tensorpack.graph_builder"])
def test_star_imports_bind_what_tensorpacks_bind(package):
    """``from tensorpack.x import *`` binds the ``__all__`` tensorpack's ``__init__`` builds (its own names and
    those of the modules it star-imports): module names included (``summary``, ``optimizer``, ``gradproc`` at
    the top), the inference callbacks in ``callbacks``."""
    namespace: dict = {}
    exec(f"from trainstack.{package} import *", namespace)
    bound = set(namespace) - {"__builtins__"}
    missing = {n for n in tensorpack_names(package) if _replaced.find(package, n) in _replaced.IMPORT_ERRORS}
    assert bound == tensorpack_names(package) - missing
    if package == "tensorpack":
        for name in ("summary", "optimizer", "gradproc", "sessinit", "sesscreate", "varreplace", "tower"):
            assert namespace[name] is importlib.import_module(f"trainstack.tensorpack.tfutils.{name}")
    if package == "tensorpack.callbacks":
        towers = importlib.import_module("trainstack.towers")
        for name in ("ClassificationError", "ScalarStats", "BinaryClassificationStats", "Inferencer",
                     "InferenceRunner", "DataParallelInferenceRunner"):
            assert namespace[name] is getattr(towers, name)
