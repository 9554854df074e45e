"""ModelExporter: a SavedModel that plain TensorFlow serves, in a process where trainstack is absent."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from trainstack.callbacks import ModelSaver
from trainstack.towers import ModelExporter, PredictConfig, SimpleTrainer, export_saved_model

# Run with `python -I` and an import hook refusing every `trainstack` module (installed editable or
# from wheels): the SavedModel must load and run with TensorFlow alone.
SERVE_SCRIPT = textwrap.dedent("""
    import json, sys

    class NoTrainstack:  # refuses trainstack, whether installed editable or from a wheel
        def find_spec(self, name, path=None, target=None):
            if name == "trainstack" or name.startswith("trainstack."):
                raise ModuleNotFoundError(f"{name} is blocked in this process")

    sys.meta_path.insert(0, NoTrainstack())
    try:
        import trainstack  # noqa: F401
        raise AssertionError("trainstack is still importable")
    except ModuleNotFoundError:
        pass
    import numpy as np
    import tensorflow as tf

    requests = json.loads(sys.argv[1])
    data = np.load(sys.argv[2])
    results = {}
    for name, (path, signature, inputs) in requests.items():
        serve = tf.saved_model.load(path).signatures[signature]
        outputs = serve(**{k: tf.constant(data[k]) for k in inputs})
        results.update({f"{name}.{k}": v.numpy() for k, v in outputs.items()})
    np.savez(sys.argv[3], **results)
    print("trainstack modules loaded:", sorted(m for m in sys.modules if m.startswith("trainstack")))
""")


def test_exported_saved_model_serves_like_the_predictors_without_trainstack(
        classifier, make_df, setup, tmp_path):
    ckpt = str(tmp_path / "ckpt")
    trainer = setup(SimpleTrainer(), classifier(), make_df(5))
    trainer.train([ModelSaver(checkpoint_dir=ckpt)], [], steps_per_epoch=5, max_epoch=2)

    full = PredictConfig(model=classifier(), output_names=["logits", "cost"], session_init=ckpt)
    path_full = ModelExporter(full).export_serving(str(tmp_path / "full"))
    only_x = PredictConfig(model=classifier(), input_names=["x"], output_names=["logits"], session_init=ckpt)
    path_x = export_saved_model(only_x, tmp_path / "only_x", signature_name="prediction_pipeline")
    assert os.path.isfile(os.path.join(path_full, "saved_model.pb"))

    x, label = make_df(1, batch=7, seed=11)[0]  # a batch size never traced before
    np.savez(tmp_path / "data.npz", x=x, label=label)
    requests = {"full": [path_full, "serving_default", ["x", "label"]],
                "only_x": [path_x, "prediction_pipeline", ["x"]]}
    proc = subprocess.run(
        [sys.executable, "-I", "-c", SERVE_SCRIPT, json.dumps(requests), str(tmp_path / "data.npz"),
         str(tmp_path / "out.npz")],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "trainstack modules loaded: []" in proc.stdout
    served = np.load(tmp_path / "out.npz")
    assert sorted(served.files) == ["full.cost", "full.logits", "only_x.logits"]

    logits, cost = trainer.get_predictor(["x", "label"], ["logits", "cost"])(x, label)
    np.testing.assert_allclose(served["full.logits"], logits, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(served["full.cost"], cost, rtol=1e-6)
    np.testing.assert_allclose(served["only_x.logits"], trainer.get_predictor(["x"], ["logits"])(x)[0],
                               rtol=1e-6, atol=1e-6)


def test_export_arguments(classifier, tmp_path):
    config = PredictConfig(model=classifier(), output_names=["logits"])
    with pytest.raises(ValueError, match="at least one input"):
        ModelExporter(PredictConfig(model=classifier(), input_names=[], output_names=["logits"])) \
            .export_serving(str(tmp_path / "b"))
    with pytest.raises(TypeError, match="PredictConfig"):
        ModelExporter(classifier())
    assert not (tmp_path / "b").exists()
    path = ModelExporter(config).export_serving(str(tmp_path / "c"), signature_name="serving_default")
    assert os.path.isfile(os.path.join(path, "saved_model.pb"))
