"""PredictConfig and OfflinePredictor: a ModelSaver checkpoint restored in a new process."""
from __future__ import annotations

import inspect
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tensorflow as tf

from trainstack.callbacks import ModelSaver
from trainstack.inputs import InputSignatureError
from trainstack.towers import OfflinePredictor, PredictConfig, SimpleTrainer, TowerFunc, export_saved_model

# Run in a fresh interpreter: load the shared TinyClassifier from the conftest file, restore the
# checkpoint with OfflinePredictor, write its outputs.
PREDICT_SCRIPT = textwrap.dedent("""
    import importlib.util, logging, sys
    import numpy as np
    logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(levelname)s %(message)s")
    conftest_path, checkpoint, data_path, out_path = sys.argv[1:]
    spec = importlib.util.spec_from_file_location("towers_conftest", conftest_path)
    conftest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conftest)
    from trainstack.towers import OfflinePredictor, PredictConfig

    data = np.load(data_path)
    full = OfflinePredictor(PredictConfig(model=conftest.TinyClassifier(), output_names=["logits", "cost"],
                                          session_init=checkpoint))
    logits, cost = full(data["x"], data["label"])
    only_x = OfflinePredictor(PredictConfig(model=conftest.TinyClassifier(), input_names=["x"],
                                            output_names=["logits"], session_init=checkpoint))
    np.savez(out_path, logits=logits, cost=cost, logits_x=only_x(data["x"])[0])
""")


@pytest.fixture
def trained(classifier, make_df, setup, tmp_path):
    """A SimpleTrainer trained 2 epochs with a ModelSaver; (trainer, checkpoint directory)."""
    ckpt = tmp_path / "ckpt"
    trainer = setup(SimpleTrainer(), classifier(), make_df(5))
    trainer.train([ModelSaver(checkpoint_dir=str(ckpt))], [], steps_per_epoch=5, max_epoch=2)
    return trainer, str(ckpt)


def test_offline_predictor_in_a_new_process_matches_get_predictor(trained, classifier, make_df, tmp_path):
    trainer, ckpt = trained
    x, label = make_df(1, batch=12, seed=9)[0]
    online = trainer.get_predictor(["x", "label"], ["logits", "cost"])
    logits, cost = online(x, label)
    (logits_x,) = trainer.get_predictor(["x"], ["logits"])(x)
    np.savez(tmp_path / "data.npz", x=x, label=label)

    out = tmp_path / "out.npz"
    proc = subprocess.run(
        [sys.executable, "-c", PREDICT_SCRIPT, inspect.getsourcefile(classifier), ckpt,
         str(tmp_path / "data.npz"), str(out)],
        capture_output=True, text=True, timeout=120, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = np.load(out)
    np.testing.assert_allclose(result["logits"], logits, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(result["cost"], cost, rtol=1e-6)
    np.testing.assert_allclose(result["logits_x"], logits_x, rtol=1e-6, atol=1e-6)
    # the optimizer's values in the checkpoint are expected to be unused: said once, not warned
    assert "Restored 2 variables" in proc.stdout
    assert "not needed by OfflinePredictor (optimizer)" in proc.stdout
    assert "WARNING" not in proc.stdout, proc.stdout

    # and the restore is what made them equal: an unrestored model predicts something else
    fresh = OfflinePredictor(PredictConfig(model=classifier(), input_names=["x"], output_names=["logits"]))
    assert not np.allclose(fresh(x)[0], logits)


def test_offline_predictor_in_process_and_return_input(trained, classifier, make_df):
    trainer, ckpt = trained
    x, label = make_df(1, batch=6, seed=3)[0]
    config = PredictConfig(model=classifier(), input_names=["x", "label"], output_names=["logits", "accuracy"],
                           session_init=ckpt, return_input=True)
    predictor = OfflinePredictor(config)
    inputs, (logits, accuracy) = predictor(x, label)
    assert inputs[0] is x and inputs[1] is label
    np.testing.assert_allclose(logits, trainer.get_predictor(["x"], ["logits"])(x)[0], rtol=1e-6, atol=1e-6)
    assert accuracy == pytest.approx(np.mean(np.argmax(logits, 1) == label))
    assert set(predictor.checkpoint_objects) == {"model"}
    # the tower is built in inference mode
    assert config.tower_func.towers["predict_tower"].ctx.is_training is False


def test_an_output_that_needs_a_left_out_input_is_refused(classifier, trained, tmp_path):
    _, ckpt = trained
    config = PredictConfig(model=classifier(), input_names=["x"], output_names=["logits", "accuracy"],
                           session_init=ckpt)
    with pytest.raises(InputSignatureError, match=r"output 'accuracy' is computed from \['label'\], not among "
                                                  r"input_names \['x'\]"):
        OfflinePredictor(config)
    only_x = PredictConfig(model=classifier(), input_names=["x"], output_names=["accuracy"], session_init=ckpt)
    with pytest.raises(InputSignatureError, match=r"output 'accuracy' is computed from \['label'\]"):
        export_saved_model(only_x, tmp_path / "export")
    assert not (tmp_path / "export").exists()


def test_tower_func_forms():
    """A plain function with input_signature, and a TowerFunc, instead of a ModelDesc."""
    signature = [tf.TensorSpec([None, 2], tf.float32, "a")]

    def make_fn():
        state = {}

        def fn(a):  # its first tower creates the variable: the predictor owns and restores it
            if "w" not in state:
                state["w"] = tf.Variable([[2.0], [3.0]], name="w")
            return tf.identity(tf.matmul(a, state["w"]), name="out")
        return fn

    a = np.array([[1.0, 1.0], [0.0, 2.0]], np.float32)
    for config in (PredictConfig(tower_func=make_fn(), input_signature=signature, output_names=["out"]),
                   PredictConfig(tower_func=TowerFunc(make_fn(), signature), output_names="out")):
        np.testing.assert_allclose(OfflinePredictor(config)(a)[0], [[5.0], [6.0]])
    # session_init given as a dict of arrays, by variable name
    config = PredictConfig(tower_func=make_fn(), input_signature=signature, output_names=["out"],
                           session_init={"w": np.array([[1.0], [1.0]])})
    np.testing.assert_allclose(OfflinePredictor(config)(a)[0], [[2.0], [2.0]])


def test_predict_config_errors(classifier, tmp_path):
    with pytest.raises(ValueError, match="output_names"):
        PredictConfig(model=classifier())
    # a name that is no input may name a placeholder_with_default inside the tower: checked by the predictor
    with pytest.raises(KeyError, match=r"'image' is neither an input of the tower function \['x', 'label'\]"):
        OfflinePredictor(PredictConfig(model=classifier(), input_names=["image"], output_names=["logits"]))
    with pytest.raises(ValueError, match="not both"):
        PredictConfig(model=classifier(), tower_func=lambda x: x, output_names=["y"])
    with pytest.raises(ValueError, match="needs input_signature"):
        PredictConfig(tower_func=lambda x: x, output_names=["y"])
    with pytest.raises(TypeError, match="needs model="):
        PredictConfig(output_names=["y"])
    with pytest.raises(FileNotFoundError):
        PredictConfig(model=classifier(), output_names=["logits"], session_init=str(tmp_path / "none"))
    with pytest.raises(TypeError, match="PredictConfig"):
        OfflinePredictor({"model": classifier()})
    # an unknown output name fails when the predictor is built, naming what exists
    with pytest.raises(KeyError, match="no tensor named 'prob'.*Available: .*'logits'"):
        OfflinePredictor(PredictConfig(model=classifier(), output_names=["prob"]))
