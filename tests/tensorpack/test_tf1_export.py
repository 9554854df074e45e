"""Export of models written in TF1 style (issue 24): a layer-function model (Conv2D, BatchNorm, ...) and a
``tf.compat.v1.get_variable`` model, loaded by their TF1 names, exported with ``export_saved_model`` and
``ModelExporter.export_compact``; the exported models give the predictor's outputs."""
from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf
import tf1_layer_cases as layer_cases  # by name (this folder is on sys.path, see conftest.py)
import tf1_variable_cases as variable_cases

from trainstack.towers import ModelExporter, OfflinePredictor, PredictConfig, SmartInit, export_saved_model


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
