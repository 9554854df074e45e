"""More of tensorpack's examples, ported by the port command (import lines only) and run as a user runs them.

Each script is tensorpack's own, byte for byte (``tests/tensorpack/examples/``; provenance in its
README.md), trained by ``run_example.py`` capped to 2 epochs of 10 steps on small data in its
dataset's real format (``example_data.py``), as in ``test_tensorpack_examples.py``. A script that does
not run in tensorpack either, as written, is checked to stop with the same error; where one line stands
in the way of running on a CPU (a GPU assertion), the test removes that line and trains the rest.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_tensorpack_examples import ACCURACY, RUNNER, TIMEOUT, assert_import_lines_only, run

from trainstack.tensorpack.port import main

HERE = Path(__file__).parent
EXAMPLES = HERE / "examples"


def port_into(folder: Path, out: Path) -> dict[str, int]:
    """``folder``'s scripts ported into ``out/<folder name>``; the import lines each changed."""
    target = out / folder.name
    assert main([str(folder), "--out", str(target)]) == 0
    return {p.name: assert_import_lines_only(p.read_bytes(), (target / p.name).read_bytes())
            for p in sorted(folder.glob("*.py"))}


def stats(logdir: Path, epochs: int = 2, steps: int = 10) -> list[dict]:
    rows = [json.loads(line) for line in (logdir / "stats.jsonl").read_text().splitlines()]
    rows = [r for r in rows if r["global_step"] > 0]   # a setter logs its value before training
    assert [(r["epoch_num"], r["global_step"]) for r in rows] == [(e, e * steps) for e in range(1, epochs + 1)]
    return rows


def fails(args: list, cwd: Path, data: Path | None = None) -> str:
    """``python *args`` in ``cwd``, which must fail; its stderr."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    if data is not None:
        env["TENSORPACK_DATASET"] = str(data)
    done = subprocess.run([sys.executable, *map(str, args)], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=TIMEOUT)
    assert done.returncode != 0, done.stdout[-2000:]
    return done.stderr


def defined_names(script: Path, function: str | None = None) -> set[str]:
    """The names ``script`` binds at its top level (and in ``function``'s body, if given)."""
    import ast
    tree = ast.parse(script.read_text())
    scopes = [tree.body]
    scopes += [n.body for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == function]
    names = set()
    for body in scopes:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names.update((a.asname or a.name).split(".")[0] for a in node.names)
            else:
                names.update(t.id for t in ast.walk(node) if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store))
    return names


def test_boilerplate_stops_where_tensorflow_stops_it(tmp_path):
    """tensorpack's template subtracts its int32 label from its float32 image: TensorFlow's own type
    error, in tensorpack as here, once the data and the trainer were set up."""
    out = tmp_path / "ported"
    assert main([str(EXAMPLES / "boilerplate.py"), "--out", str(out)]) == 0
    assert assert_import_lines_only((EXAMPLES / "boilerplate.py").read_bytes(),
                                    (out / "boilerplate.py").read_bytes()) == 2
    err = fails([RUNNER, "--max-epoch", 1, "--steps-per-epoch", 1, out / "boilerplate.py"], tmp_path)
    assert "Input 'y' of 'Sub' Op has type int32 that does not match type float32 of argument 'x'" in err, err[-3000:]
    assert "in build_graph" in err   # in the model's build_graph


def test_cifar10_resnet_trains_on_the_cpu_without_its_gpu_assertion(tmp_path):
    import example_data
    example_data.write_cifar10(str(tmp_path / "data"))
    assert port_into(EXAMPLES / "ResNet", tmp_path / "ported") == {"cifar10-preact18-mixup.py": 4,
                                                                  "cifar10-resnet.py": 5}
    script = tmp_path / "ported" / "ResNet" / "cifar10-resnet.py"
    # as written it asserts a GPU: on a CPU tf.test.is_gpu_available() is False, so it stops there, as tensorpack did
    import tensorflow as tf
    assert not tf.test.is_gpu_available()
    line = b"        assert tf.test.is_gpu_available()\n"
    source = script.read_bytes()
    assert source.count(line) == 1
    script.write_bytes(source.replace(line, b""))
    run([RUNNER, "--max-epoch", 2, "--steps-per-epoch", 10, script, "-n", 1], tmp_path, tmp_path / "data")
    rows = stats(tmp_path / "train_log" / "cifar10-resnet")
    print(f"cifar10-resnet.py -n 1: train_error {rows[0]['train_error']:.3f} -> {rows[-1]['train_error']:.3f}, "
          f"validation_error {rows[0]['validation_error']:.3f} -> {rows[-1]['validation_error']:.3f}")
    assert rows[-1]["train_error"] < 0.75, rows   # 10 classes: chance is 0.9
    # lr 0.1 on 20 steps moves the batch statistics a lot: the validation error is noisy (measured 0.6 to 0.85)
    assert all(0 <= r["validation_error"] <= 1 for r in rows)
    assert rows[0]["learning_rate"] == pytest.approx(0.1)   # ScheduledHyperParamSetter's (1, 0.1)
    assert rows[-1]["wd_cost"] > 0   # regularize_cost('.*/W') under the exponential_decay of the step


def test_disturb_label_examples(tmp_path):
    """svhn-disturb.py trains svhn-digit-convnet.py's model (loaded with ``imp.load_source`` from
    ``../basics``, ported with it) on labels DisturbLabel replaces by random ones with ``--prob``:
    with 0.1 it learns the classes, with 1.0 (every label random) it cannot. mnist-disturb.py reads
    ``get_config`` of ``../basics/mnist-convnet.py``, which tensorpack removed before it removed the
    DisturbLabel folder: it stops there, as in tensorpack."""
    import example_data
    data, out = tmp_path / "data", tmp_path / "ported"
    example_data.write_svhn(str(data), {"train": 256, "extra": 256, "test": 256})
    example_data.write_mnist(str(data), train=256, test=64)
    assert port_into(EXAMPLES / "DisturbLabel", out) == {"disturb.py": 1, "mnist-disturb.py": 4,
                                                         "svhn-disturb.py": 3}
    port_into(EXAMPLES / "basics", out)
    # mnist-disturb.py reads mnist_example.get_config, which basics/mnist-convnet.py does not define: an
    # AttributeError before anything trains, in tensorpack as here
    assert b"get_config = mnist_example.get_config" in (EXAMPLES / "DisturbLabel" / "mnist-disturb.py").read_bytes()
    assert "get_config" not in defined_names(out / "basics" / "mnist-convnet.py")
    accuracy = {}
    for prob in ("0.1", "1.0"):   # one epoch of 10 steps each
        run([RUNNER, "--max-epoch", 1, "--steps-per-epoch", 10, out / "DisturbLabel" / "svhn-disturb.py",
             "--prob", prob], tmp_path, data)
        accuracy[prob] = stats(tmp_path / "train_log" / "svhn-disturb", 1)[-1]["validation_accuracy"]
    print(f"svhn-disturb.py: validation_accuracy by --prob: {accuracy}")
    assert accuracy["0.1"] >= ACCURACY
    assert accuracy["1.0"] < 0.4   # random labels: nothing to learn (chance is 0.1)


#: tensorpack 1547a54's mnist-addition.py maps its dataflow with an undefined name (``MapData(ds, dp)``,
#: a NameError in tensorpack as here): its ``mapper``, defined on the line before, is meant.
ADDITION_FIX = (b"    ds = MapData(ds, dp)\n", b"    ds = MapData(ds, mapper)\n")


def test_spatial_transformer_mnist_addition_trains_its_two_transformers(tmp_path):
    import math

    import example_data
    from test_tensorpack_examples import images
    data, out = tmp_path / "data", tmp_path / "ported"
    example_data.write_mnist(str(data), train=512, test=256)
    assert port_into(EXAMPLES / "SpatialTransformer", out) == {"mnist-addition.py": 4}
    script = out / "SpatialTransformer" / "mnist-addition.py"
    # get_data's MapData(ds, dp): no dp in its scope nor the module's, a NameError in tensorpack as here
    assert "dp" not in defined_names(script, "get_data")
    source = script.read_bytes()
    assert source.count(ADDITION_FIX[0]) == 1
    script.write_bytes(source.replace(*ADDITION_FIX))
    run([RUNNER, "--max-epoch", 2, "--steps-per-epoch", 10, script], tmp_path, data)
    logdir = tmp_path / "train_log" / "mnist-addition"
    rows = stats(logdir)
    print(f"mnist-addition.py: cross_entropy_loss {rows[0]['cross_entropy_loss']:.3f} -> "
          f"{rows[-1]['cross_entropy_loss']:.3f}, validation_cost {rows[-1]['validation_cost']:.3f}, "
          f"validation_error {rows[-1]['validation_error']:.3f}")
    # 19 sums: below log(19), the cost of knowing nothing, the classifier learned at least how often each sum comes
    assert rows[-1]["validation_cost"] < math.log(19) - 0.05, rows
    assert rows[-1]["cross_entropy_loss"] < rows[0]["cross_entropy_loss"]
    # SummaryGradient: the gradient of each of the 22 weights, the two transformers' scaled by ScaleGradient
    # (tensorpack's tags: the moving average of each gradient's RMS as SummaryGradient/<var>/rms)
    grads = {k for k in rows[-1] if k.startswith("SummaryGradient/") and k.endswith("/rms")}
    assert len(grads) == 22 and {"SummaryGradient/STN1/fct/W/rms", "SummaryGradient/STN2/conv0/W/rms",
                                 "SummaryGradient/fct/b/rms"} <= grads
    # tf.summary.image('visualize'): the two digits, and each transformer's view of them, side by side
    shown = images(logdir, "visualization/visualize")
    assert sorted(shown) == [10, 20] and len(shown[20]) == 30
    assert shown[20][0].shape == (2 * 42, 3 * 42, 1)


def test_char_rnn_trains_its_two_layer_lstm_under_tf1s_names(tmp_path):
    """char-rnn.py (``tf.contrib.rnn``'s ``MultiRNNCell`` of two ``LSTMBlockCell``s, ``static_rnn``,
    ``placeholder_with_default`` states, ``GlobalNormClip``) on a corpus of random words."""
    import math
    import random

    import tensorflow as tf
    rng = random.Random(0)
    words = "the quick brown fox jumps over the lazy dog and a cat sat on the mat".split()
    corpus = " ".join(rng.choice(words) for _ in range(4000))
    (tmp_path / "input.txt").write_text(corpus)
    assert port_into(EXAMPLES / "Char-RNN", tmp_path / "ported") == {"char-rnn.py": 4}
    run([RUNNER, "--max-epoch", 2, "--steps-per-epoch", 15, tmp_path / "ported" / "Char-RNN" / "char-rnn.py",
         "train", "--corpus", tmp_path / "input.txt"], tmp_path)
    logdir = tmp_path / "train_log" / "char-rnn"
    rows = stats(logdir, 2, 15)
    chance = math.log(len(set(corpus)))   # 27 characters
    print(f"char-rnn.py: cost {rows[0]['cost']:.3f} -> {rows[-1]['cost']:.3f} (log of the vocabulary: {chance:.3f})")
    # from a uniform start (log 27 = 3.30): after 30 steps 2.38 to 2.60 in the first runs, 2.84 in one CI run
    assert rows[-1]["cost"] < chance - 0.25 and rows[-1]["cost"] < rows[0]["cost"], rows
    shapes = dict(tf.train.list_variables(str(logdir / "model-30")))
    for k in range(2):   # TF1's names: rnnlm/multi_rnn_cell/cell_k/lstm_cell/{kernel, bias}
        prefix = f"model/untracked/rnnlm.Smulti_rnn_cell.Scell_{k}.Slstm_cell.S"
        assert shapes[prefix + "kernel/.ATTRIBUTES/VARIABLE_VALUE"] == [512, 1024]
        assert shapes[prefix + "bias/.ATTRIBUTES/VARIABLE_VALUE"] == [1024]


def test_tf1_rnn_cells_compute_tf1s_lstm_formula_under_tf1s_names():
    """``tfv1.contrib.rnn``: ``static_rnn`` of a ``MultiRNNCell`` of an ``LSTMBlockCell`` (forget bias 1)
    and a ``BasicLSTMCell(forget_bias=0)`` computes TF1's LSTM step by step, NumPy's; the variables
    are TF1's, made at the first step and reused after; what they cannot do is an error naming it."""
    import numpy as np
    import tensorflow as tf

    from trainstack.tensorpack.tf1 import TF1CallError, TowerContext, TowerFunc, tfv1
    rnn = tfv1.contrib.rnn
    rng = np.random.default_rng(0)
    xs = rng.normal(size=(3, 2, 4)).astype("float32")   # 3 steps, batch 2, 4 features

    def tower(x):
        cell = rnn.MultiRNNCell([rnn.LSTMBlockCell(num_units=5), rnn.BasicLSTMCell(num_units=3, forget_bias=0.0)])
        outputs, last = rnn.static_rnn(cell, tf.unstack(x, axis=0), dtype=tf.float32, scope="rnnlm")
        return tf.stack(outputs), last

    func = TowerFunc(tower, [tf.TensorSpec([3, None, 4], tf.float32, "x")])

    @tf.function
    def build(x):
        with TowerContext("tower0", is_training=True):
            return func(x)

    outputs, last = build(tf.constant(xs))
    names = {v.name.split(":")[0]: v.numpy() for v in func.variables}
    assert sorted(names) == ["rnnlm/multi_rnn_cell/cell_0/lstm_cell/bias", "rnnlm/multi_rnn_cell/cell_0/lstm_cell/kernel",
                             "rnnlm/multi_rnn_cell/cell_1/basic_lstm_cell/bias",
                             "rnnlm/multi_rnn_cell/cell_1/basic_lstm_cell/kernel"]
    assert names["rnnlm/multi_rnn_cell/cell_0/lstm_cell/kernel"].shape == (4 + 5, 20)
    assert not names["rnnlm/multi_rnn_cell/cell_0/lstm_cell/bias"].any()   # zeros

    def sigmoid(v):
        return 1 / (1 + np.exp(-v))

    def lstm(prefix, forget_bias, x, c, h):   # TF1's: [i, j, f, o] = [x, h] W + b
        i, j, f, o = np.split(np.concatenate([x, h], 1) @ names[prefix + "kernel"] + names[prefix + "bias"], 4, 1)
        c = c * sigmoid(f + forget_bias) + sigmoid(i) * np.tanh(j)
        return c, np.tanh(c) * sigmoid(o)

    state = [(np.zeros((2, 5)), np.zeros((2, 5))), (np.zeros((2, 3)), np.zeros((2, 3)))]
    for t in range(3):
        state[0] = lstm("rnnlm/multi_rnn_cell/cell_0/lstm_cell/", 1.0, xs[t], *state[0])
        state[1] = lstm("rnnlm/multi_rnn_cell/cell_1/basic_lstm_cell/", 0.0, state[0][1], *state[1])
        np.testing.assert_allclose(outputs[t].numpy(), state[1][1], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(last[0].c.numpy(), state[0][0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(last[1].h.numpy(), state[1][1], rtol=1e-5, atol=1e-6)
    with pytest.raises(TF1CallError, match="use_peephole"):
        rnn.LSTMBlockCell(4, use_peephole=True)
    with pytest.raises(TF1CallError, match="sequence_length"):
        rnn.static_rnn(rnn.BasicLSTMCell(2), [tf.zeros([1, 2])], dtype=tf.float32, sequence_length=[1])
