"""Export of models written in TF1 style (issue 24): a layer-function model (Conv2D, BatchNorm, ...) and a
``tf.compat.v1.get_variable`` model, loaded by their TF1 names, exported with ``export_saved_model`` and
``ModelExporter.export_compact`` (tensorpack's, ``trainstack.tensorpack.tfutils.export``); the exported models
give the predictor's outputs."""
from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf
import tf1_layer_cases as layer_cases  # by name (this folder is on sys.path, see conftest.py)
import tf1_variable_cases as variable_cases

from trainstack.tensorpack.tfutils.export import ModelExporter
from trainstack.towers import OfflinePredictor, PredictConfig, SmartInit, export_saved_model


def _cases():
    """(model, output name, weights by TF1 name, an input batch) for each model (a tensor named in a
    ``variable_scope`` has its name scope, as in TF1: ``fc1/logits``)."""
    moved = {**layer_cases.WEIGHTS, "bn0/mean/EMA": layer_cases.WEIGHTS["bn0/mean/EMA"] + 0.3}  # moving stats used
    x = np.random.default_rng(2).normal(size=(5, 4)).astype("float32")
    return {"layer functions": (layer_cases.LayerModel, "logits", moved,
                                layer_cases.batches(1, batch=5)[0][0].astype("float32")),
            "get_variable": (variable_cases.TF1Model, "fc1/logits",
                             {"fc0/W": variable_cases.W0 * 2, "fc0/b": np.full(8, -0.2, "float32"),
                              "fc1/W": variable_cases.W1, "fc1/b": np.ones(2, "float32")}, x)}


@pytest.mark.parametrize("kind", ["layer functions", "get_variable"])
def test_tf1_style_models_export_and_serve_the_predictors_outputs(kind, tmp_path):
    model_cls, output, weights, x = _cases()[kind]
    input_name = model_cls().inputs()[0].name
    config = PredictConfig(model=model_cls(), input_names=[input_name], output_names=[output],
                           session_init=SmartInit(weights))
    expected = OfflinePredictor(config)(x)[0]
    # the weights loaded by their TF1 names are what the predictor computes with (not the initial values)
    fresh = OfflinePredictor(PredictConfig(model=model_cls(), input_names=[input_name], output_names=[output],
                                           session_init=SmartInit(None)))(x)[0]
    assert not np.allclose(expected, fresh, atol=1e-3)

    saved = export_saved_model(config, tmp_path / "saved")
    serve = tf.saved_model.load(saved).signatures["serving_default"]
    np.testing.assert_allclose(serve(**{input_name: tf.constant(x)})[output].numpy(), expected,
                               rtol=1e-5, atol=1e-5)

    graph_def = tf.compat.v1.GraphDef()
    with open(ModelExporter(config).export_compact(str(tmp_path / "graph.pb")), "rb") as f:
        graph_def.ParseFromString(f.read())
    assert not [n.name for n in graph_def.node if n.op in ("VarHandleOp", "ReadVariableOp")]  # frozen
    imported = tf.compat.v1.wrap_function(lambda: tf.compat.v1.import_graph_def(graph_def, name=""), [])
    run = imported.prune([f"{input_name}:0"], [f"{output}:0"])
    np.testing.assert_allclose(run(tf.constant(x))[0].numpy(), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("optimize", [True, False])
def test_export_compact_freezes_the_graph(classifier, make_df, optimize, tmp_path):
    """tensorpack's compact export of a core ModelDesc (a Keras layer): frozen, and the predictor's outputs."""
    model = classifier()
    config = PredictConfig(model=model, output_names=["logits", "cost:0"])
    path = ModelExporter(config).export_compact(str(tmp_path / "graph.pb"), optimize=optimize)
    graph_def = tf.compat.v1.GraphDef()
    with open(path, "rb") as f:
        graph_def.ParseFromString(f.read())
    assert not [n.name for n in graph_def.node if n.op in ("VarHandleOp", "ReadVariableOp")]

    imported = tf.compat.v1.wrap_function(lambda: tf.compat.v1.import_graph_def(graph_def, name=""), [])
    run = imported.prune(["x:0", "label:0"], ["logits:0", "cost:0"])
    x, label = make_df(1, batch=5, seed=4)[0]
    logits, cost = run(tf.constant(x), tf.constant(label))
    expected_logits, expected_cost = OfflinePredictor(config)(x, label)
    np.testing.assert_allclose(logits.numpy(), expected_logits, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(cost.numpy(), expected_cost, rtol=1e-6)
    # frozen: later changes of the variables do not reach the exported graph
    model.fc.kernel.assign(model.fc.kernel + 1.0)
    np.testing.assert_allclose(run(tf.constant(x), tf.constant(label))[0].numpy(), expected_logits,
                               rtol=1e-6, atol=1e-6)

    with pytest.raises(ValueError, match="toco_compatible"):
        ModelExporter(config).export_compact(str(tmp_path / "g2.pb"), optimize=False, toco_compatible=True)
    with pytest.raises(ValueError, match="cannot all be graph nodes of their own name"):
        ModelExporter(PredictConfig(model=classifier(), output_names=["x"])).export_compact(
            str(tmp_path / "d.pb"))  # an output named like an input


def test_export_serving_takes_tensorpacks_tags(classifier, tmp_path):
    import os

    config = PredictConfig(model=classifier(), output_names=["logits"])
    with pytest.raises(ValueError, match="always writes the single tag 'serve'"):
        ModelExporter(config).export_serving(str(tmp_path / "a"), tags=["train"])
    assert not (tmp_path / "a").exists()
    # tags=["serve"] is what is written anyway
    path = ModelExporter(config).export_serving(str(tmp_path / "c"), tags=["serve"])
    assert os.path.isfile(os.path.join(path, "saved_model.pb"))
    assert set(tf.saved_model.load(path).signatures) == {"serving_default"}
