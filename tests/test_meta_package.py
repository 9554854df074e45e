"""The meta-package re-exports the layers' public names, lazily."""
import json
import subprocess
import sys

import pytest

trainstack = pytest.importorskip("trainstack")
if not getattr(trainstack, "__file__", None):
    pytest.skip("the meta-package is not installed", allow_module_level=True)


def test_reexports_every_public_name_of_the_layers():
    import trainstack.callbacks
    import trainstack.distributed
    import trainstack.inputs
    import trainstack.loop
    import trainstack.towers

    for layer in (trainstack.loop, trainstack.callbacks, trainstack.inputs, trainstack.towers,
                  trainstack.distributed):
        for name in layer.__all__:
            assert getattr(trainstack, name) is getattr(layer, name)
            assert name in trainstack.__all__
    with pytest.raises(AttributeError, match="no attribute 'NoSuchName'"):
        trainstack.NoSuchName  # noqa: B018


def test_importing_the_loop_does_not_import_tensorflow():
    code = "import sys, json, trainstack.loop; print(json.dumps('tensorflow' in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert json.loads(out.stdout) is False
