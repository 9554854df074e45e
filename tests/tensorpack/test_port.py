"""The port command: import lines only, every other byte kept; --out, in place with a backup,
directories, and its errors; and a ported tensorpack example trains (in a subprocess, a few steps)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from trainstack.tensorpack.port import main, port_source

#: tensorpack's examples/basics/, verbatim from tensorpack master 1547a54 (see test_tensorpack_examples.py)
SCRIPTS = Path(__file__).parent / "examples" / "basics"


def _changed(old: bytes, new: bytes) -> list[tuple[bytes, bytes]]:
    old_lines, new_lines = old.splitlines(keepends=True), new.splitlines(keepends=True)
    assert len(old_lines) == len(new_lines)
    return [(a, b) for a, b in zip(old_lines, new_lines) if a != b]


def test_the_basics_examples_port_with_their_import_lines_only(tmp_path, capsys):
    assert main([str(SCRIPTS), "--out", str(tmp_path)]) == 0
    report = capsys.readouterr().out
    for name, count in [("mnist-convnet.py", 4), ("cifar-convnet.py", 5), ("mnist-tflayers.py", 4),
                        ("mnist-visualizations.py", 3), ("svhn-digit-convnet.py", 4), ("export-model.py", 3)]:
        changed = _changed((SCRIPTS / name).read_bytes(), (tmp_path / name).read_bytes())
        assert len(changed) == count
        for old, new in changed:
            assert old.startswith((b"from tensorpack", b"import tensorpack"))
            assert new == old.replace(b"tensorpack", b"trainstack.tensorpack", 1)
        assert f"{name}: {count} import lines changed -> {tmp_path / name}" in report
    assert "6 files, 23 lines changed" in report
    assert "does not provide" not in report


def test_import_forms_and_everything_else_byte_identical():
    source = textwrap.dedent("""\
        # -*- coding: utf-8 -*-
        import os, tensorpack   # a comment
        import tensorpack.tfutils.summary as summ
        import tensorpack.dataflow
        from tensorpack import (ModelDesc,  # the model
                                TrainConfig)
        from tensorpack.utils import logger; x = 'tensorpack'
        def f():
            from tensorpack.tfutils import scope_utils
            return tensorpack.tfutils.varreplace.remap_variables, scope_utils
        y = "import tensorpack"
        """)
    new, notes = port_source(source)
    assert new == textwrap.dedent("""\
        # -*- coding: utf-8 -*-
        import os, trainstack.tensorpack as tensorpack, trainstack.tensorpack.tfutils.varreplace   # a comment
        import trainstack.tensorpack.tfutils.summary as summ
        import trainstack.tensorpack.dataflow, trainstack.tensorpack as tensorpack
        from trainstack.tensorpack import (ModelDesc,  # the model
                                TrainConfig)
        from trainstack.tensorpack.utils import logger; x = 'tensorpack'
        def f():
            from trainstack.tensorpack.tfutils import scope_utils
            return tensorpack.tfutils.varreplace.remap_variables, scope_utils
        y = "import tensorpack"
        """)
    assert notes == []
    namespace: dict = {}
    exec(new, namespace)   # the rewritten statements import what the script reaches
    from trainstack.tensorpack.tfutils.varreplace import remap_variables

    assert namespace["f"]()[0] is remap_variables
    assert namespace["tensorpack"].dataflow.BatchData is namespace["tensorpack"].BatchData


def test_line_endings_and_encoding_are_kept(tmp_path):
    script = tmp_path / "crlf.py"
    script.write_bytes("# -*- coding: latin-1 -*-\r\nfrom tensorpack import *\r\ns = 'caf\xe9'\r\n".encode("latin-1"))
    assert main([str(script), "--out", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "crlf.py").read_bytes() == \
        "# -*- coding: latin-1 -*-\r\nfrom trainstack.tensorpack import *\r\ns = 'caf\xe9'\r\n".encode("latin-1")


def test_the_report_names_what_is_not_provided_and_its_replacement():
    source = textwrap.dedent("""\
        from tensorpack import *
        from tensorpack.tfutils.sesscreate import NewSessionCreator
        from tensorpack.callbacks import hooks
        from tensorpack.models.registry import layer_register
        import tensorpack.utils.concurrency as concurrency, tensorpack.utils.loadcaffe as loadcaffe
        sess = get_default_sess_config()
        hooks.CallbackToHook(x)
        params = loadcaffe.load_caffe(a, b)
        counter = concurrency.StoppableThread()
        thread = concurrency.ShareSessionThread()
        """)
    _, notes = port_source(source, "s.py")
    assert len(notes) == 5
    assert notes[0].startswith("s.py:1: get_default_sess_config: ") and "RuntimeConfig" in notes[0]
    assert notes[1].startswith("s.py:2: NewSessionCreator: ") and "TensorFlow 2 has no sessions" in notes[1]
    assert notes[2].startswith("s.py:4: tensorpack.models.registry: ") and "no such module" in notes[2]
    assert notes[3].startswith("s.py:7: CallbackToHook: ") and "SessionRunHooks" in notes[3]
    assert notes[4].startswith("s.py:8: load_caffe: ") and "SmartInit" in notes[4]


def test_in_place_keeps_a_backup_and_refuses_to_overwrite_one(tmp_path, capsys):
    script = tmp_path / "train.py"
    original = b"from tensorpack import *\nprint(1)\n"
    script.write_bytes(original)
    assert main([str(script)]) == 0
    assert script.read_bytes() == b"from trainstack.tensorpack import *\nprint(1)\n"
    assert (tmp_path / "train.py.orig").read_bytes() == original
    assert "original kept as" in capsys.readouterr().out
    assert main([str(script)]) == 0                    # already ported: nothing to change, nothing written
    script.write_bytes(original)
    assert main([str(script)]) == 2
    assert "train.py.orig exists" in capsys.readouterr().err
    assert script.read_bytes() == original


def test_a_directory_ports_every_script_below_it(tmp_path, capsys):
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    (tmp_path / "src" / "a.py").write_text("import tensorpack\n")
    (tmp_path / "src" / "pkg" / "b.py").write_text("from tensorpack.dataflow import dataset\n")
    (tmp_path / "src" / "pkg" / "c.py").write_text("print('no tensorpack here')\n")
    assert main([str(tmp_path / "src"), "--out", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "a.py").read_text() == "import trainstack.tensorpack as tensorpack\n"
    assert (tmp_path / "out" / "pkg" / "b.py").read_text() == "from trainstack.tensorpack.dataflow import dataset\n"
    assert (tmp_path / "out" / "pkg" / "c.py").read_text() == "print('no tensorpack here')\n"
    assert "3 files, 2 lines changed" in capsys.readouterr().out


def test_a_syntax_error_or_a_missing_path_is_an_error_and_nothing_is_written(tmp_path, capsys):
    good, bad = tmp_path / "good.py", tmp_path / "bad.py"
    good.write_text("from tensorpack import *\n")
    bad.write_text("from tensorpack import *\ndef f(:\n")
    assert main([str(good), str(bad)]) == 2
    assert f"{bad}:2: syntax error" in capsys.readouterr().err
    assert good.read_text() == "from tensorpack import *\n" and not (tmp_path / "good.py.orig").exists()
    assert main([str(tmp_path / "missing.py")]) == 2
    assert "missing.py: no such file or directory" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        main([])
    assert exit_.value.code == 2


TRAIN = """
import importlib.util, json, sys
import numpy as np
spec = importlib.util.spec_from_file_location("ported", sys.argv[1])
script = importlib.util.module_from_spec(spec)
spec.loader.exec_module(script)             # the ported script, its __main__ block not run


class CostRecorder(script.Callback):
    def __init__(self):
        self.costs = []

    def _before_run(self, ctx):
        return ["total_cost"]

    def _after_run(self, ctx, values):
        self.costs.append(float(values.results[0]))


rng = np.random.default_rng(0)
label = rng.integers(0, 3, size=8).astype("int32")
image = (rng.uniform(size=(8, 28, 28)) * 0.5 + 0.25 * label[:, None, None]).astype("float32")
recorder = CostRecorder()
script.launch_train_with_config(script.TrainConfig(
    model=script.Model(), dataflow=[(image, label)] * 8, max_epoch=1, steps_per_epoch=8, monitors=[],
    callbacks=[recorder, script.ModelSaver(checkpoint_dir=sys.argv[2])]), script.SimpleTrainer())
print(json.dumps(recorder.costs))
"""


def test_a_ported_example_trains(tmp_path):
    assert main([str(SCRIPTS / "mnist-convnet.py"), "--out", str(tmp_path)]) == 0
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    done = subprocess.run([sys.executable, "-c", TRAIN, str(tmp_path / "mnist-convnet.py"), str(tmp_path / "ckpt")],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    costs = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(costs) == 8 and costs[-1] < costs[0]
    assert any(p.name.startswith("model-8") for p in (tmp_path / "ckpt").iterdir())


def test_the_command_runs_without_tensorflow(tmp_path):
    """The port command is text processing: ``python -m trainstack.tensorpack.port`` imports neither
    TensorFlow nor the layers (the package's top-level names load on first use)."""
    code = ("import runpy, sys; sys.argv = ['port', sys.argv[1], '--out', sys.argv[2]]\n"
            "try:\n    runpy.run_module('trainstack.tensorpack.port', run_name='__main__')\n"
            "except SystemExit as e:\n    assert not e.code, e.code\n"
            "print(sorted(m for m in sys.modules if m == 'tensorflow' or m.startswith('trainstack.towers')))")
    out = subprocess.run([sys.executable, "-c", code, str(SCRIPTS / "mnist-convnet.py"), str(tmp_path)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"
    assert (tmp_path / "mnist-convnet.py").read_text().count("trainstack.tensorpack") == 4


#: tensorpack's GAN and DoReFa-Net examples, verbatim from the same commit
EXAMPLES = Path(__file__).parent / "examples"
TFV1 = b"from trainstack.tensorpack import tfv1 as tf"


def test_tensorpack_scripts_import_tensorflow_as_tfv1_and_their_own_modules_too(tmp_path, capsys):
    assert main([str(EXAMPLES / "GAN"), str(EXAMPLES / "DoReFa-Net"), "--out", str(tmp_path)]) == 0
    report = capsys.readouterr().out
    expected = {   # each script's changed lines, byte for byte
        "GAN.py": [(b"import tensorflow as tf\n", TFV1 + b"\n"),
                   (b"from tensorpack import BatchNorm, DataFlow, ModelDescBase, StagingInput, TowerTrainer, argscope\n",
                    b"from trainstack.tensorpack import BatchNorm, DataFlow, ModelDescBase, StagingInput, TowerTrainer, "
                    b"argscope\n"),
                   (b"from tensorpack.graph_builder import DataParallelBuilder, LeastLoadedDeviceSetter\n",
                    b"from trainstack.tensorpack.graph_builder import DataParallelBuilder, LeastLoadedDeviceSetter\n"),
                   (b"from tensorpack.tfutils.summary import add_moving_summary\n",
                    b"from trainstack.tensorpack.tfutils.summary import add_moving_summary\n"),
                   (b"from tensorpack.tfutils.tower import TowerContext, TowerFunc\n",
                    b"from trainstack.tensorpack.tfutils.tower import TowerContext, TowerFunc\n"),
                   (b"from tensorpack.utils import logger\n", b"from trainstack.tensorpack.utils import logger\n"),
                   (b"from tensorpack.utils.argtools import memoized_method\n",
                    b"from trainstack.tensorpack.utils.argtools import memoized_method\n")],
        "DCGAN.py": [(b"import tensorflow as tf\n", TFV1 + b"\n"),
                     (b"from tensorpack import *\n", b"from trainstack.tensorpack import *\n"),
                     (b"from tensorpack.tfutils.scope_utils import auto_reuse_variable_scope\n",
                      b"from trainstack.tensorpack.tfutils.scope_utils import auto_reuse_variable_scope\n"),
                     (b"from tensorpack.utils.viz import stack_patches\n",
                      b"from trainstack.tensorpack.utils.viz import stack_patches\n")],
        "ConditionalGAN-mnist.py": [
            (b"import tensorflow as tf\n", TFV1 + b"\n"),
            (b"from tensorpack import *\n", b"from trainstack.tensorpack import *\n"),
            (b"from tensorpack.dataflow import dataset\n", b"from trainstack.tensorpack.dataflow import dataset\n"),
            (b"from tensorpack.tfutils.scope_utils import auto_reuse_variable_scope\n",
             b"from trainstack.tensorpack.tfutils.scope_utils import auto_reuse_variable_scope\n"),
            (b"from tensorpack.utils.viz import interactive_imshow, stack_patches\n",
             b"from trainstack.tensorpack.utils.viz import interactive_imshow, stack_patches\n")],
        "svhn-digit-dorefa.py": [
            (b"import tensorflow as tf\n", TFV1 + b"\n"),
            (b"from tensorpack import *\n", b"from trainstack.tensorpack import *\n"),
            (b"from tensorpack.dataflow import dataset\n", b"from trainstack.tensorpack.dataflow import dataset\n"),
            (b"from tensorpack.tfutils.summary import add_moving_summary, add_param_summary\n",
             b"from trainstack.tensorpack.tfutils.summary import add_moving_summary, add_param_summary\n"),
            (b"from tensorpack.tfutils.varreplace import remap_variables\n",
             b"from trainstack.tensorpack.tfutils.varreplace import remap_variables\n")],
        "dorefa.py": [(b"import tensorflow as tf\n", TFV1 + b"\n")],   # imports no tensorpack: the script's own module
    }
    for name, lines in expected.items():
        # the folders ported above (SuperResolution/ holds a GAN.py too)
        source = next(path for path in (EXAMPLES / "GAN" / name, EXAMPLES / "DoReFa-Net" / name) if path.exists())
        assert _changed(source.read_bytes(), (tmp_path / name).read_bytes()) == lines, name
        assert f"{source}: {len(lines)} import line{'s' if len(lines) > 1 else ''} changed -> {tmp_path / name}" \
            in report
    # GAN/ also holds WGAN.py, Improved-WGAN.py, BEGAN.py, InfoGAN-mnist.py, Image2Image.py, CycleGAN.py and
    # DiscoGAN-CelebA.py (test_gan_examples.py): 7 files, 33 lines more; DoReFa-Net/ alexnet-dorefa.py,
    # resnet-dorefa.py and imagenet_utils.py (test_image_examples.py): 3 files, 23 lines more
    assert "15 files, 78 lines changed" in report
    tf_lines = report.split("TensorFlow imports of the tensorpack scripts (--keep-tensorflow leaves them as they "
                            "are):\n")[1].splitlines()
    assert [line for line in tf_lines if "GAN" not in line or any(
        f"/{name}:" in line for name in ("ConditionalGAN-mnist.py", "DCGAN.py", "GAN.py"))] == [
        f"  {EXAMPLES / 'GAN' / 'ConditionalGAN-mnist.py'}:10: import tensorflow as tf -> tfv1: tensorpack's scripts "
        f"used TensorFlow 1",
        f"  {EXAMPLES / 'GAN' / 'DCGAN.py'}:10: import tensorflow as tf -> tfv1: tensorpack's scripts used TensorFlow 1",
        f"  {EXAMPLES / 'GAN' / 'GAN.py'}:6: import tensorflow as tf -> tfv1: tensorpack's scripts used TensorFlow 1",
        f"  {EXAMPLES / 'DoReFa-Net' / 'alexnet-dorefa.py'}:11: import tensorflow as tf -> tfv1: tensorpack's "
        f"scripts used TensorFlow 1",
        f"  {EXAMPLES / 'DoReFa-Net' / 'dorefa.py'}:5: import tensorflow as tf -> tfv1: tensorpack's scripts used "
        f"TensorFlow 1 (dorefa.py is imported by alexnet-dorefa.py, a tensorpack script)",
        f"  {EXAMPLES / 'DoReFa-Net' / 'resnet-dorefa.py'}:9: import tensorflow as tf -> tfv1: tensorpack's "
        f"scripts used TensorFlow 1",
        f"  {EXAMPLES / 'DoReFa-Net' / 'svhn-digit-dorefa.py'}:8: import tensorflow as tf -> tfv1: tensorpack's "
        f"scripts used TensorFlow 1"]
    # every script of the two folders imports TensorFlow as tf, but imagenet_utils.py (tensorpack's tfv1)
    assert len(tf_lines) == 14


def test_tensorflow_import_forms_in_a_tensorpack_script():
    source = textwrap.dedent("""\
        import tensorflow as tf   # TF1
        import tensorflow
        import tensorflow.compat.v1 as tf1
        from tensorflow.compat import v1
        from tensorflow import keras
        import tensorflow.contrib.slim as slim
        import numpy as np, tensorflow as tf2
        import tensorflow.compat.v1
        from tensorpack import *
        def f():
            import tensorflow as tf; return tf
        """)
    new, notes = port_source(source, "s.py")
    assert new == textwrap.dedent("""\
        from trainstack.tensorpack import tfv1 as tf   # TF1
        from trainstack.tensorpack import tfv1 as tensorflow
        from trainstack.tensorpack import tfv1 as tf1
        from trainstack.tensorpack import tfv1 as v1
        from tensorflow import keras
        from trainstack.tensorpack.tf1.contrib import slim
        import numpy as np, tensorflow as tf2
        import tensorflow.compat.v1
        from trainstack.tensorpack import *
        def f():
            from trainstack.tensorpack import tfv1 as tf; return tf
        """)
    why = "tfv1: tensorpack's scripts used TensorFlow 1"
    assert notes == [
        f"s.py:1: import tensorflow as tf -> {why}",
        f"s.py:2: import tensorflow -> {why}",
        f"s.py:3: import tensorflow.compat.v1 as tf1 -> {why}",
        f"s.py:4: from tensorflow.compat import v1 -> {why}",
        "s.py:5: from tensorflow import keras: left as it is, TensorFlow 2's (for TF1's, take the name from "
        "trainstack.tensorpack's tfv1)",
        "s.py:6: import tensorflow.contrib.slim as slim -> from trainstack.tensorpack.tf1.contrib import slim: "
        "tfv1.contrib, TF1's slim, layers, rnn (tensorflow.contrib is not part of TensorFlow 2)",
        "s.py:7: import numpy as np, tensorflow as tf2: left as it is (it imports other modules too): give "
        "TensorFlow an import statement of its own and port again, to make it tfv1 (tensorpack's scripts used "
        "TensorFlow 1)",
        "s.py:8: import tensorflow.compat.v1: left as it is, TensorFlow 2's (for TF1's, take the name from "
        "trainstack.tensorpack's tfv1)",
        f"s.py:11: import tensorflow as tf -> {why}"]
    namespace: dict = {}
    exec("".join(new.splitlines(keepends=True)[:4]), namespace)
    from trainstack.tensorpack import tfv1
    assert namespace["tf"] is namespace["tensorflow"] is namespace["tf1"] is namespace["v1"] is tfv1


def test_tensorflow_contrib_imports_become_tfv1_contribs():
    """``tensorflow.contrib``'s ``slim``, ``layers`` and ``rnn`` are imported from the TF1 room's
    ``tfv1.contrib`` (``trainstack.tensorpack.tf1.contrib``), each form with its names, and ``slim.nets``'
    ``resnet_v1`` from ``trainstack.tensorpack.tf1.slim_nets``; other parts of contrib (and other nets), and a
    statement over several lines, are left with a report line saying why."""
    source = textwrap.dedent("""\
        import tensorflow.contrib.slim as slim
        from tensorflow.contrib import slim
        from tensorflow.contrib import layers as L, rnn
        import tensorflow.contrib.rnn as rnn
        from tensorflow.contrib.slim.nets import resnet_v1
        import tensorflow.contrib.eager as tfe
        from tensorflow.contrib import (slim,
                                        layers)
        from tensorflow.contrib.slim.nets import vgg
        from tensorpack import *
        """)
    new, notes = port_source(source, "s.py")
    module = "from trainstack.tensorpack.tf1.contrib import"
    nets = "from trainstack.tensorpack.tf1.slim_nets import"
    assert new.splitlines()[:5] == [f"{module} slim", f"{module} slim", f"{module} layers as L, rnn", f"{module} rnn",
                                    f"{nets} resnet_v1"]
    assert new.splitlines()[5:] == source.splitlines()[5:9] + ["from trainstack.tensorpack import *"]
    why = "tfv1.contrib, TF1's slim, layers, rnn (tensorflow.contrib is not part of TensorFlow 2)"
    left = (": left as it is: tensorflow.contrib is not part of TensorFlow 2 (tfv1.contrib has slim, layers, rnn and "
            "slim.nets' resnet_v1, resnet_utils only)")
    assert notes == [
        f"s.py:1: import tensorflow.contrib.slim as slim -> {module} slim: {why}",
        f"s.py:2: from tensorflow.contrib import slim -> {module} slim: {why}",
        f"s.py:3: from tensorflow.contrib import layers as L, rnn -> {module} layers as L, rnn: {why}",
        f"s.py:4: import tensorflow.contrib.rnn as rnn -> {module} rnn: {why}",
        f"s.py:5: from tensorflow.contrib.slim.nets import resnet_v1 -> {nets} resnet_v1: tfv1.contrib.slim.nets, "
        "TF1's resnet_v1, resnet_utils (tensorflow.contrib is not part of TensorFlow 2)",
        "s.py:6: import tensorflow.contrib.eager as tfe" + left,
        "s.py:7: from tensorflow.contrib import slim, layers: left as it is (it spans lines): put it on one line "
        "and port again, to import it from trainstack.tensorpack.tf1.contrib",
        "s.py:9: from tensorflow.contrib.slim.nets import vgg" + left]
    namespace: dict = {}
    exec("\n".join(new.splitlines()[:5]), namespace)
    from trainstack.tensorpack import tfv1
    assert namespace["resnet_v1"] is tfv1.contrib.slim.nets.resnet_v1
    assert namespace["slim"] is tfv1.contrib.slim and namespace["L"] is tfv1.contrib.layers
    assert namespace["rnn"] is tfv1.contrib.rnn and namespace["slim"].layers.conv2d is tfv1.contrib.layers.conv2d


def test_keep_tensorflow_and_files_without_tensorpack_keep_their_tensorflow_imports(tmp_path, capsys):
    (tmp_path / "src").mkdir()
    script = b"import tensorflow as tf\nfrom tensorpack import *\nfrom helper import f\n"
    (tmp_path / "src" / "train.py").write_bytes(script)
    (tmp_path / "src" / "helper.py").write_bytes(b"import tensorflow as tf\nf = tf.random_uniform\n")
    (tmp_path / "src" / "tf2.py").write_bytes(b"import tensorflow as tf\nx = tf.ones(1)\n")   # no tensorpack
    assert main([str(tmp_path / "src"), "--out", str(tmp_path / "a"), "--keep-tensorflow"]) == 0
    assert (tmp_path / "a" / "train.py").read_bytes() == \
        b"import tensorflow as tf\nfrom trainstack.tensorpack import *\nfrom helper import f\n"
    assert (tmp_path / "a" / "helper.py").read_bytes() == b"import tensorflow as tf\nf = tf.random_uniform\n"
    assert "TensorFlow imports" not in capsys.readouterr().out

    assert main([str(tmp_path / "src"), "--out", str(tmp_path / "b")]) == 0
    assert (tmp_path / "b" / "train.py").read_bytes() == \
        b"from trainstack.tensorpack import tfv1 as tf\nfrom trainstack.tensorpack import *\nfrom helper import f\n"
    assert (tmp_path / "b" / "helper.py").read_bytes() == \
        b"from trainstack.tensorpack import tfv1 as tf\nf = tf.random_uniform\n"   # the script's own module
    assert (tmp_path / "b" / "tf2.py").read_bytes() == b"import tensorflow as tf\nx = tf.ones(1)\n"
    assert "3 files, 3 lines changed" in capsys.readouterr().out

    # the script alone: its own module is left, and the report says to port it with the script
    assert main([str(tmp_path / "src" / "train.py"), "--out", str(tmp_path / "c")]) == 0
    assert f"{tmp_path / 'src' / 'train.py'}:3: helper: the script's own module helper.py imports TensorFlow and " \
           f"no tensorpack; port it with the script (name both, or their directory) to make its TensorFlow import " \
           f"tfv1 too" in capsys.readouterr().out
