"""The layering contracts of .importlinter: each layer imports only the layers below it."""
import shutil
import subprocess
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
    for source in sorted(ROOT.glob("packages/*/src/trainstack/*/**/*.py")):
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
