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
