"""The layering contracts of .importlinter: each layer imports only the layers below it."""
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_import_linter_contracts_are_kept():
    pytest.importorskip("importlinter", reason="import-linter runs in the nox 'layering' session")
    import trainstack

    if getattr(trainstack, "__file__", None):
        pytest.skip("the meta-package is installed: import-linter cannot split a regular "
                    "'trainstack' package; the nox 'layering' session runs this without it")
    result = subprocess.run([shutil.which("lint-imports") or "lint-imports", "--config",
                             str(ROOT / ".importlinter")], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_a_layer_uses_only_the_public_names_of_another():
    """What one layer needs of another is public (issue 35.4): no module imports an underscored
    name, or reaches an underscored module, of another trainstack distribution. A private helper
    borrowed across layers changes without notice; make it public (documented, in __all__)."""
    import ast

    borrowed = []
    for source in LAYER_SOURCES:
        layer = source.relative_to(ROOT).parts[1]
        for node in ast.walk(ast.parse(source.read_text(), str(source))):
            if not isinstance(node, ast.ImportFrom) or node.level or not node.module:
                continue
            parts = node.module.split(".")
            if parts[0] != "trainstack" or len(parts) < 2 or parts[1] == layer:
                continue
            private = [p for p in parts[2:] if p.startswith("_")] + \
                      [a.name for a in node.names if a.name.startswith("_")]
            if private:
                borrowed.append(f"{source.relative_to(ROOT)}:{node.lineno} imports {private} from {node.module}")
    assert not borrowed, "\n".join(borrowed)


LAYER_SOURCES = sorted(ROOT.glob("packages/*/src/trainstack/*/**/*.py"))


def _module_file(module: str) -> Path | None:
    """The source of ``trainstack.<layer>...`` in this repository (a module or a package)."""
    parts = module.split(".")
    base = ROOT / "packages" / parts[1] / "src" / Path(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _declared_all(source: Path) -> list[str] | None:
    """The literal ``__all__`` of a module's top level, or None when it declares none. Names it
    computes by a call (the tensorpack layer's stand-ins, served by its module ``__getattr__``)
    are left out: only what the source spells is checked."""
    import ast

    class Literals(dict):
        def __missing__(self, name: str) -> object:
            return lambda *args, **kwargs: ()  # a helper __all__ calls: computed names, left out

    constants: dict[str, object] = Literals()  # literal tuples a starred __all__ entry may name
    for node in ast.parse(source.read_text(), str(source)).body:
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, ast.AnnAssign) else []
        names = [t.id for t in targets if isinstance(t, ast.Name)]
        if "__all__" in names:
            return list(eval(compile(ast.Expression(node.value), str(source), "eval"),  # noqa: S307
                             {"__builtins__": {}}, constants))
        if len(names) == 1 and node.value is not None:
            try:
                constants[names[0]] = ast.literal_eval(node.value)
            except ValueError:
                pass
    return None


def _is_submodule(source: Path, name: str) -> bool:
    """Whether ``name`` is a module of the package whose ``__init__.py`` is ``source``."""
    folder = source.parent
    return source.name == "__init__.py" and ((folder / f"{name}.py").is_file() or
                                             (folder / name / "__init__.py").is_file())


def test_a_layer_imports_from_another_only_names_in_its_all():
    """A name one layer imports from another is in the target module's ``__all__`` (or is one of
    the target package's public modules): ``__all__`` is the layer's promise, and a name outside
    it may change without notice. Make the name public there (documented, in ``__all__``) or
    import it from the module where it is public."""
    import ast

    outside = []
    for source in LAYER_SOURCES:
        layer = source.relative_to(ROOT).parts[1]
        for node in ast.walk(ast.parse(source.read_text(), str(source))):
            if not isinstance(node, ast.ImportFrom) or node.level or not node.module:
                continue
            parts = node.module.split(".")
            if parts[0] != "trainstack" or len(parts) < 2 or parts[1] == layer:
                continue
            where = f"{source.relative_to(ROOT)}:{node.lineno}"
            target = _module_file(node.module)
            if target is None:
                outside.append(f"{where} imports from {node.module}, which has no source in packages/")
                continue
            public = _declared_all(target)
            for alias in node.names:
                if alias.name == "*" or (not alias.name.startswith("_") and _is_submodule(target, alias.name)):
                    continue
                if public is None:
                    outside.append(f"{where} imports {alias.name!r} from {node.module}, which declares no __all__")
                elif alias.name not in public:
                    outside.append(f"{where} imports {alias.name!r}, not in {node.module}.__all__")
    assert not outside, "\n".join(outside)


def test_the_checker_refuses_a_name_outside_all(tmp_path):
    """The check above reads ``__all__`` and submodules as it should (so that it could fail)."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text('from .mod import shown, hidden\n__all__ = ["shown"]\n')
    (package / "mod.py").write_text('__all__ = ["shown"]\nshown = hidden = 1\n')
    init = package / "__init__.py"
    assert _declared_all(init) == ["shown"] and _declared_all(package / "mod.py") == ["shown"]
    assert _is_submodule(init, "mod") and not _is_submodule(init, "shown")
    assert _declared_all(tmp_path / "pkg" / "mod.py") is not None
    (package / "bare.py").write_text("x = 1\n")
    assert _declared_all(package / "bare.py") is None


#: what a package that serves its names on first use binds besides them (trainstack.loop.lazy_exports)
LAZY_PLUMBING = {"TYPE_CHECKING", "lazy_exports"}


def _top_level_bindings(source: Path) -> dict[str, int]:
    """The names a module's top level binds (imports, assignments, functions, classes) -> line;
    the imports under ``if TYPE_CHECKING:`` count (a lazy package's names, see lazy_exports)."""
    import ast

    def statements(body: list) -> Iterator[ast.stmt]:
        for node in body:
            if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
                yield from node.body
            else:
                yield node

    bound: dict[str, int] = {}
    for node in statements(ast.parse(source.read_text(), str(source)).body):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name != "*":
                    bound[alias.asname or alias.name.split(".")[0]] = node.lineno
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound[node.name] = node.lineno
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        bound[name.id] = node.lineno
    return bound


@pytest.mark.parametrize("init", sorted(ROOT.glob("packages/*/src/trainstack/*/__init__.py")),
                         ids=lambda p: p.parent.name)
def test_a_layer_package_exports_its_public_names_and_nothing_else(init):
    """A layer's ``__init__.py`` binds, besides its own modules, exactly the public names of its
    ``__all__`` (no stray ``Any``, ``trainstack`` or helper). A package that loads its names on
    first use (a module ``__getattr__``: the tensorpack layer) is checked for the stray ones only."""
    public = _declared_all(init)
    assert public is not None, f"{init.relative_to(ROOT)} declares no __all__"
    assert len(public) == len(set(public)), f"{init.relative_to(ROOT)}: __all__ lists a name twice"
    bound = _top_level_bindings(init)
    stray = sorted(f"{name} (line {line})" for name, line in bound.items()
                   if not name.startswith("_") and name not in public and not _is_submodule(init, name)
                   and name not in LAZY_PLUMBING)
    assert not stray, f"{init.relative_to(ROOT)} binds public names outside __all__: {stray}"
    if "__getattr__" not in bound or "lazy_exports" in bound:
        unbound = sorted(set(public) - set(bound))
        assert not unbound, f"{init.relative_to(ROOT)}: __all__ names it does not bind: {unbound}"


#: reaches of TensorFlow's and Keras's internals, as they appear in source
PRIVATE_TF = ("tensorflow.python", "tensorflow.core", "tf.__internal__", "keras.src", "_call_flat",
              "_distributed_container", "_flatten_layers", "_seed_generators", "_deferred_initialize",
              "_cross_device_ops", "_learning_rate", "_distribution_strategy", "update_checkpoint_state_internal",
              "import EagerTensor", "context.executor")
#: known uses outside tf_private, in a module another change is splitting (its wrapper is in tf_private)
KNOWN_PRIVATE_TF: dict[str, dict[str, str]] = {}


def test_the_core_reaches_tensorflow_internals_only_through_tf_private():
    """Every private TensorFlow or Keras API of the core (callbacks, inputs, towers, distributed)
    goes through ``trainstack.callbacks.tf_private``, where it is documented and checked."""
    import re

    found = []
    for source in LAYER_SOURCES:
        rel = str(source.relative_to(ROOT))
        if rel.split("/")[1] not in ("callbacks", "inputs", "towers", "distributed") or source.name == "tf_private.py":
            continue
        known = KNOWN_PRIVATE_TF.get(rel, {})
        for lineno, line in enumerate(source.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            for needle in PRIVATE_TF:
                pattern = rf"(?<=[.\"']){re.escape(needle)}(?!\w)" if needle.startswith("_") else re.escape(needle)
                if re.search(pattern, code) and needle not in known:
                    found.append(f"{rel}:{lineno}: {needle}: {line.strip()}")
    assert not found, "use trainstack.callbacks.tf_private:\n" + "\n".join(found)
