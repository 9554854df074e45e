"""tensorpack's ``contrib.keras`` (``KerasModel``, ``setup_keras_trainer``), Keras's learning phase in a
tower, and tensorpack's ``examples/keras/`` scripts, ported by the port command and run as a user runs them.

``examples/keras/mnist-keras.py`` (Keras layers inside a ``ModelDesc``, ``M.updates``,
``KerasPhaseCallback``) and ``mnist-keras-v2.py`` (``KerasModel``: ``compile``, ``fit``) are tensorpack's
own, byte for byte from commit 1547a54 (``tests/tensorpack/examples/keras/``), trained capped to 2 epochs
of 10 steps by ``run_example.py`` on MNIST's idx files (``example_data.py``; see
``test_tensorpack_examples.py``).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from test_tensorpack_examples import ACCURACY, RUNNER, port_folder, run

HERE = Path(__file__).parent
EXAMPLES = HERE / "examples"


def stats(logdir: Path, epochs: int = 2, steps: int = 10) -> list[dict]:
    rows = [json.loads(line) for line in (logdir / "stats.jsonl").read_text().splitlines()]
    assert [(r["epoch_num"], r["global_step"]) for r in rows] == [(e, e * steps) for e in range(1, epochs + 1)]
    return rows


@pytest.fixture(scope="module")
def keras_examples(tmp_path_factory):
    """tensorpack's examples/keras/, ported (import lines only), and MNIST's files."""
    import example_data
    root = tmp_path_factory.mktemp("keras")
    assert port_folder(EXAMPLES / "keras", root / "ported") == {"mnist-keras-v2.py": 6, "mnist-keras.py": 7}
    example_data.write_mnist(str(root / "data"), train=1280, test=256)
    return root


def test_mnist_keras_trains_keras_layers_in_a_model_desc(keras_examples, tmp_path):
    run([RUNNER, "--max-epoch", 2, "--steps-per-epoch", 10, keras_examples / "ported" / "mnist-keras.py"], tmp_path,
        keras_examples / "data")
    logdir = tmp_path / "train_log" / "mnist-keras"
    rows = stats(logdir)
    print(f"mnist-keras.py: accuracy {rows[0]['accuracy']:.3f} -> {rows[-1]['accuracy']:.3f}, validation_accuracy "
          f"{rows[-1]['validation_accuracy']:.3f}, total_cost {rows[0]['total_cost']:.3f} -> {rows[-1]['total_cost']:.3f}")
    assert rows[-1]["validation_accuracy"] >= ACCURACY, rows   # 10 classes: chance is 0.1
    assert rows[-1]["total_cost"] < rows[0]["total_cost"]
    # Keras's regularizers, summed by the script as tf.add_n(M.losses): 1e-5 * |W|^2 of the two Dense kernels
    assert 0 < rows[-1]["regularize_loss"] < 0.1
    assert rows[-1]["lr"] == pytest.approx(1e-3)   # the script's tf.summary.scalar('lr', ...) of its schedule
    assert (logdir / "model-20.index").exists()


def test_mnist_keras_v2_trains_a_keras_model_with_keras_model_fit(keras_examples, tmp_path):
    run([RUNNER, "--max-epoch", 2, "--steps-per-epoch", 10, keras_examples / "ported" / "mnist-keras-v2.py"],
        tmp_path, keras_examples / "data")
    logdir = tmp_path / "train_log" / "mnist-keras-v2"
    rows = stats(logdir)
    names = {"total_loss", "categorical_crossentropy", "categorical_accuracy", "regularize_cost",
             "validation_total_loss", "validation_categorical_crossentropy", "validation_categorical_accuracy"}
    assert names <= set(rows[-1]), sorted(rows[-1])
    print(f"mnist-keras-v2.py: validation_categorical_accuracy {rows[0]['validation_categorical_accuracy']:.3f} -> "
          f"{rows[-1]['validation_categorical_accuracy']:.3f}, total_loss {rows[0]['total_loss']:.3f} -> "
          f"{rows[-1]['total_loss']:.3f}")
    assert rows[-1]["validation_categorical_accuracy"] >= ACCURACY, rows
    assert rows[-1]["total_loss"] < rows[0]["total_loss"]
    for row in rows:   # total_loss = the loss + the model's regularizers (in training); the loss alone in validation
        assert row["regularize_cost"] > 0
        assert row["validation_total_loss"] == pytest.approx(row["validation_categorical_crossentropy"])
    # the ModelSaver's checkpoints hold the Keras model, and they differ: it was trained
    first, last = (tf.train.load_checkpoint(str(logdir / f"model-{s}")) for s in (10, 20))
    kernels = [n for n, _ in tf.train.list_variables(str(logdir / "model-20")) if n.startswith("model/keras_model/")
               and "VARIABLE_VALUE" in n]
    assert len(kernels) == 12, kernels   # 4 convolutions and 2 dense layers, kernel and bias each
    assert all(not np.array_equal(first.get_tensor(n), last.get_tensor(n)) for n in kernels)


def test_keras_model_trains_its_weights_and_reports_tensorpacks_stats():
    import keras_cases
    data = keras_cases.batches(20, 16)
    model = keras_cases.train(keras_cases.SimpleTrainer(), data, 20, validation=keras_cases.batches(2, 64, seed=9),
                              monitors=[])
    before = {"hidden/kernel": keras_cases.W1, "hidden/bias": np.zeros(8), "out/kernel": keras_cases.W2,
              "out/bias": np.zeros(3)}
    after = keras_cases.weights(model)
    assert sorted(after) == sorted(before) == ["hidden/bias", "hidden/kernel", "out/bias", "out/kernel"]
    assert all(not np.allclose(after[p], before[p]) for p in after)
    latest = {n: model.trainer.monitors.get_latest(n) for n in (
        *keras_cases.STATS, "categorical_accuracy", "validation_total_loss", "validation_categorical_crossentropy",
        "validation_categorical_accuracy")}
    reg = keras_cases.L2 * float(np.sum(after["hidden/kernel"] ** 2))   # Keras's l2: L2 * sum(w^2)
    assert latest["validation_total_loss"] == pytest.approx(latest["validation_categorical_crossentropy"])
    assert latest["regularize_cost"] == pytest.approx(reg, rel=0.2)   # a moving average of it
    print(f"KerasModel: {latest}")
    assert latest["validation_categorical_accuracy"] >= 0.8   # 3 classes: chance is 1/3


def test_two_towers_train_as_one_tower_on_both_batches(cpus):
    import keras_cases
    out = cpus.run(keras_cases.towers_case)
    single = out["single"]
    for name in ("ps", "replicated"):
        for path, value in single["weights"].items():
            np.testing.assert_allclose(out[name]["weights"][path], value, rtol=1e-5, atol=1e-6, err_msg=path)
        for stat in keras_cases.STATS:   # the towers' mean: one tower's value on both batches
            assert out[name]["stats"][stat] == pytest.approx(single["stats"][stat], rel=1e-5), stat
        assert 0 <= out[name]["stats"]["categorical_accuracy"] <= 1   # the main tower's (tensorpack)
    moved = max(np.abs(single["weights"][p] - w).max() for p, w in (("hidden/kernel", keras_cases.W1),
                                                                    ("out/kernel", keras_cases.W2)))
    assert moved > 1e-3, moved


def test_batch_normalization_statistics_are_the_main_towers_as_in_tensorpack(cpus):
    """tensorpack ran the main training tower's update ops only: with 2 towers the moving mean follows
    tower 0's batches (the other tower's assignment is dropped), under both multi-GPU trainers."""
    import keras_cases
    out = cpus.run(keras_cases.bn_towers_case)
    assert np.abs(out["main_tower_only"] - out["every_tower"]).max() > 0.05  # the two rules differ here
    for name in ("ps", "replicated"):
        np.testing.assert_allclose(out[name], out["main_tower_only"], rtol=1e-5, atol=1e-6, err_msg=name)


def test_keras_layers_in_a_tower_follow_the_towers_training_phase():
    """Keras 3 has no learning phase: an outermost Keras call in a tower without ``training=`` gets the
    tower's ``is_training`` (what tensorpack's KerasPhaseCallback fed); an explicit one is kept;
    ``layer.updates`` is [] in a tower, and Keras's own (missing) outside."""
    import keras

    from trainstack.tensorpack.tf1 import TowerContext, TowerFunc

    dropout = keras.Sequential([keras.layers.Dropout(0.5)])
    seen = {}

    def tower(x):
        seen["updates"] = dropout.updates
        return dropout(x), dropout(x, training=False)

    func = TowerFunc(tower, [tf.TensorSpec([None, 1000], tf.float32, "x")])

    @tf.function
    def build(x, training):
        with TowerContext("tower0" if training else "", is_training=training):
            return func(x)

    ones = tf.ones([1, 1000])
    for training in (True, False):
        implicit, explicit = build(ones, training)
        zeros = int(np.sum(implicit.numpy() == 0))
        assert (300 < zeros < 700) if training else zeros == 0, (training, zeros)
        np.testing.assert_array_equal(explicit.numpy(), ones.numpy())
    assert seen["updates"] == []
    assert not hasattr(dropout, "updates")


@pytest.mark.parametrize("visible, expected", [("", "SimpleTrainer"), ("0,1", "SyncMultiGPUTrainerParameterServer")])
def test_keras_model_without_a_trainer_picks_tensorpacks_and_says_which(monkeypatch, caplog, visible, expected):
    """No ``trainer=``: tensorpack's rule (SimpleTrainer up to one GPU, else the parameter-server trainer
    over ``get_num_gpu()`` towers, ``CUDA_VISIBLE_DEVICES`` counted first), said in the log."""
    import logging

    import keras_cases

    from trainstack.tensorpack import FeedInput
    from trainstack.tensorpack.contrib.keras import KerasModel
    from trainstack.tensorpack.dataflow import DataFromList

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    with caplog.at_level(logging.INFO, logger="trainstack.tensorpack"):
        model = KerasModel(keras_cases.get_model, input_signature=keras_cases.INPUTS,
                           target_signature=keras_cases.TARGETS,
                           input=FeedInput(DataFromList(keras_cases.batches(2, 4), shuffle=False)))
    assert type(model.trainer).__name__ == expected
    assert getattr(model.trainer, "num_towers", 1) == (2 if visible else 1)
    assert f"so {expected} (tensorpack's rule)" in caplog.text
