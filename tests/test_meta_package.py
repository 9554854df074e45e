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
    import trainstack.dataflow
    import trainstack.distributed
    import trainstack.inputs
    import trainstack.loop
    import trainstack.towers

    for layer in (trainstack.loop, trainstack.dataflow, trainstack.callbacks, trainstack.inputs,
                  trainstack.towers, trainstack.distributed):
        for name in layer.__all__:
            assert getattr(trainstack, name) is getattr(layer, name)
            assert name in trainstack.__all__
    with pytest.raises(AttributeError, match="no attribute 'NoSuchName'"):
        trainstack.NoSuchName  # noqa: B018


@pytest.mark.parametrize("layer", ["trainstack.loop", "trainstack.dataflow"])
def test_importing_the_loop_does_not_import_tensorflow(layer):
    code = f"import sys, json, {layer}; print(json.dumps('tensorflow' in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert json.loads(out.stdout) is False


def test_dataflow_names_from_the_meta_package():
    import trainstack.dataflow
    import trainstack.inputs
    from trainstack import BatchData, DataFromList, MultiProcessDataFlow  # noqa: F401

    assert trainstack.MultiProcessDataFlow is trainstack.inputs.MultiProcessDataFlow
    assert trainstack.InputError is trainstack.inputs.InputError is trainstack.dataflow.InputError
    assert [len(b) for b in BatchData(DataFromList([[i] for i in range(5)], shuffle=False), 2)] == [1, 1]


def test_the_meta_package_does_not_import_the_tensorpack_layer():
    """``trainstack.tensorpack`` (tensorpack's module tree) is imported explicitly: resolving every
    name of ``trainstack`` leaves it unimported."""
    code = ("import sys, json, trainstack; [getattr(trainstack, n) for n in trainstack.__all__]; "
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('trainstack.tensorpack'))))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_the_meta_package_has_no_tf1_names_and_replaces_nothing():
    """``from trainstack import *`` is the core: none of the TF1 room's own names, the core's classes
    (not the tensorpack layer's subclasses), and nothing in TensorFlow or Keras replaced."""
    code = """
import tensorflow as tf, keras
ids = (id(tf.compat.v1.get_variable), id(tf.summary.image), id(tf.summary.scalar), id(tf.add_n))
import trainstack
from trainstack import *
names = [getattr(trainstack, n) for n in trainstack.__all__]
assert (id(tf.compat.v1.get_variable), id(tf.summary.image), id(tf.summary.scalar), id(tf.add_n)) == ids
assert not hasattr(keras.optimizers.Optimizer, 'minimize')
import trainstack.tensorpack.tf1 as tf1, trainstack.towers as core
from trainstack.tensorpack import _replaced
tf1_only = [n for n in tf1.__all__ if n not in _replaced.SUBCLASSES + _replaced.WRAPPERS]
assert [n for n in tf1_only if hasattr(trainstack, n)] == [], [n for n in tf1_only if hasattr(trainstack, n)]
assert trainstack.SimpleTrainer is core.SimpleTrainer and trainstack.ModelDesc is core.ModelDesc
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
