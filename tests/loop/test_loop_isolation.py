"""The loop layer stands alone: no third-party dependency, no TensorFlow."""
import importlib.metadata
import json
import subprocess
import sys


def test_distribution_declares_no_dependencies():
    assert not importlib.metadata.requires("trainstack-loop")


def test_import_pulls_only_the_standard_library():
    code = (
        "import sys, json; before = set(sys.modules); import trainstack.loop; "
        "print(json.dumps(sorted({m.split('.')[0] for m in set(sys.modules) - before})))"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    imported = set(json.loads(out.stdout))
    third_party = imported - set(sys.stdlib_module_names) - {"trainstack"}
    assert not third_party, f"trainstack.loop imported non-stdlib modules: {sorted(third_party)}"
    assert "tensorflow" not in imported
