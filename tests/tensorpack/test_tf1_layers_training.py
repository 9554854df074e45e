"""tensorpack's layer functions in training (issue 24): a model written as tensorpack's examples
write it trains single-tower and 2-tower under its TF1 variable names, trains exactly as the same
model in Keras layers from the same weights, and a tensorpack ``.npz`` loads into it by name."""
from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf
import tf1_layer_cases as cases  # by name: the multi-device worker imports it (see multigpu_cases.py)

from trainstack.callbacks import MergeAllSummaries, ModelSaver, MovingAverageSummary
from trainstack.loop import Callback
from trainstack.tensorpack.tfutils.sessinit import get_model_loader
from trainstack.towers import OfflinePredictor, PredictConfig, SmartInit

MNIST_NAMES = ["conv0/W", "conv0/b", "conv1/W", "conv1/b", "conv1/bn/gamma", "conv1/bn/beta", "conv1/bn/mean/EMA",
               "conv1/bn/variance/EMA", "fc0/W", "fc0/b", "fc1/W", "fc1/b"]
RTOL, ATOL = 1e-4, 1e-5


class Snapshot(Callback):
    """The model's variables before training, by name."""

    def _before_train(self):
        self.before = {v.name.split(":")[0]: cases.value(v) for v in self.trainer.tower_func.variables}


def write_npz(path, weights) -> str:
    np.savez(path, **weights)
    return str(path)


def test_a_mnist_convnet_style_model_trains_single_tower_under_tf1_names(tmp_path):
    snapshot = Snapshot()
    trainer = cases.train(cases.MnistLike(), callbacks=[snapshot, ModelSaver(checkpoint_dir=str(tmp_path))],
                          extra=[MovingAverageSummary(), MergeAllSummaries()])
    variables = {v.name.split(":")[0]: v for v in trainer.tower_func.variables}
    assert list(variables) == MNIST_NAMES
    assert [n for n, v in variables.items() if not v.trainable] == ["conv1/bn/mean/EMA", "conv1/bn/variance/EMA"]
    for name, before in snapshot.before.items():  # every weight trained, the moving averages moved
        assert not np.allclose(before, cases.value(variables[name])), name
    np.testing.assert_array_equal(snapshot.before["conv1/bn/mean/EMA"], 0)
    np.testing.assert_array_equal(snapshot.before["conv1/bn/variance/EMA"], 1)
    # add_param_summary(('.*/W', ['histogram', 'rms'])) matched the TF1 names
    names = trainer.monitors.scalar_names()
    for w in ("conv0/W", "conv1/W", "fc0/W", "fc1/W"):
        assert f"param-summary/{w}-rms" in names
        rms = float(np.sqrt(np.mean(cases.value(variables[w]) ** 2)))
        assert trainer.monitors.get_latest(f"param-summary/{w}-rms") == pytest.approx(rms, rel=1e-5)
    assert "regularize_loss" in names and "cross_entropy_loss" in names
    keys = [k for k, _ in tf.train.list_variables(str(tmp_path))]
    for name in MNIST_NAMES:  # the TF1 names, in the checkpoint's keys
        assert any(name.replace("/", ".S") in k or name in k for k in keys), (name, keys)


def test_layer_functions_train_as_the_same_model_in_keras_layers(tmp_path):
    layer, keras_weights = cases.trained_pair(write_npz(tmp_path / "init.npz", cases.WEIGHTS))
    assert list(layer) == cases.LAYER_NAMES
    for name in cases.LAYER_NAMES:
        if name != "bn0/variance/EMA":  # Keras averages the biased batch variance, tensorpack the unbiased
            np.testing.assert_allclose(layer[name], keras_weights[name], rtol=RTOL, atol=ATOL, err_msg=name)
        assert not np.allclose(layer[name], cases.WEIGHTS[name]), name  # loaded from the .npz, then trained


def test_two_towers_train_under_tf1_names_and_as_keras(cpus, tmp_path):
    names, ema_copies, layer, keras_weights = cpus.run(cases.two_towers_case,
                                                       write_npz(tmp_path / "init.npz", cases.WEIGHTS))
    assert names == MNIST_NAMES
    for name, copies in ema_copies.items():  # updated by tower 0, copied to the other device after each epoch
        assert len(copies) == 2 and np.array_equal(copies[0], copies[1]), name
        assert not np.allclose(copies[0], 0.0 if "mean" in name else 1.0), name
    for name in cases.LAYER_NAMES:
        if name != "bn0/variance/EMA":
            np.testing.assert_allclose(layer[name], keras_weights[name], rtol=RTOL, atol=ATOL, err_msg=name)


def test_sync_statistics_normalize_by_all_towers_as_keras_synchronized_batch_norm(cpus, tmp_path):
    layer, keras_weights = cpus.run(cases.sync_bn_case, write_npz(tmp_path / "init.npz", cases.WEIGHTS))
    for name in cases.LAYER_NAMES:  # both average E[x^2] - E[x]^2 of the whole step's batch: variance/EMA too
        np.testing.assert_allclose(layer[name], keras_weights[name], rtol=RTOL, atol=ATOL, err_msg=name)


def keras_logits(image: np.ndarray, weights: dict) -> np.ndarray:
    """KerasModel's inference-mode logits with ``weights``."""
    model = cases.KerasModel()
    model.conv0.build((None, 8, 8, 1))
    model.bn0.build((None, 8, 8, 4))
    model.fc0.build((None, 64))
    for name, var in model.weights().items():
        var.assign(weights[name])
    x = tf.nn.relu(model.bn0(model.conv0(image), training=False))
    return model.fc0(tf.reshape(tf.nn.max_pool2d(x, 2, 2, "VALID"), [-1, 64])).numpy()


def predictor(session_init) -> OfflinePredictor:
    return OfflinePredictor(PredictConfig(model=cases.LayerModel(), input_names=["input"], output_names=["logits"],
                                          session_init=session_init))


def test_a_tensorpack_npz_loads_by_name_into_the_layer_function_model(tmp_path):
    image = cases.batches(1)[0][0]
    logits = predictor(SmartInit(write_npz(tmp_path / "model.npz", cases.WEIGHTS)))(image)[0]
    np.testing.assert_allclose(logits, keras_logits(image, cases.WEIGHTS), rtol=RTOL, atol=ATOL)

    # a variable the file lacks is an error of the predictor naming it (and what the file holds);
    # the variable's name is its path under the checkpoint's "untracked" variables ("/" escaped as ".S")
    partial = {k: v for k, v in cases.WEIGHTS.items() if k != "fc0/b"}
    partial["fc9/W"] = np.zeros((2, 2), "float32")
    with pytest.raises(ValueError, match=r"no value for \[model/untracked/fc0(/|\.S)b\]\. It holds: \[.*fc9/W\]"):
        predictor(get_model_loader(write_npz(tmp_path / "partial.npz", partial)))

    # a value of another shape is an error naming it
    wrong = {**cases.WEIGHTS, "fc0/W": np.zeros((63, 3), "float32")}
    with pytest.raises(ValueError, match=r"fc0/W: value \(63, 3\), variable \(64, 3\)"):
        predictor(SmartInit(write_npz(tmp_path / "wrong.npz", wrong)))
