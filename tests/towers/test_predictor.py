"""get_predictor / get_predictors / OnlinePredictor: outputs, inputs, errors."""
from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from trainstack.inputs import InputSignatureError
from trainstack.towers import (
    ModelDesc,
    OnlinePredictor,
    SimpleTrainer,
    TowerFunc,
    VariableReuseError,
    get_current_tower_context,
)
from trainstack.towers.predict.predictor import predict_device


@pytest.fixture
def trained(model, dataflow, setup):
    trainer = setup(SimpleTrainer(), model, dataflow)
    trainer.train([], [], steps_per_epoch=5, max_epoch=1)
    return trainer, model


def softmax_accuracy(x, label, kernel, bias):
    logits = x @ kernel + bias
    return logits, np.mean(np.argmax(logits, 1) == label)


def test_predictor_outputs_match_a_manual_computation(trained, make_df):
    trainer, model = trained
    pred = trainer.get_predictor(["x", "label"], ["logits", "accuracy"])
    x, label = make_df(1, batch=32, seed=5)[0]
    logits, accuracy = pred(x, label)
    want_logits, want_acc = softmax_accuracy(x, label, model.fc.kernel.numpy(), model.fc.bias.numpy())
    np.testing.assert_allclose(logits, want_logits, rtol=1e-5, atol=1e-5)
    assert accuracy == pytest.approx(want_acc)
    assert isinstance(logits, np.ndarray) and logits.shape == (32, 2)
    assert ("predict_tower0", False) in model.contexts
    assert trainer.get_predictor(["x", "label"], ["logits", "accuracy"]) is pred


def test_predictors_follow_training(trained, make_df, dataflow):
    trainer, model = trained
    pred = trainer.get_predictor(["x"], ["logits"])
    x = make_df(1, seed=3)[0][0]
    before = pred(x)[0]
    trainer.train_op(**{"tower0/x": dataflow[0][0], "tower0/label": dataflow[0][1]})
    after = pred(x)[0]
    assert not np.allclose(before, after)
    np.testing.assert_allclose(after, x @ model.fc.kernel.numpy() + model.fc.bias.numpy(), rtol=1e-5,
                               atol=1e-5)


def test_inputs_left_out_are_zeros_shaped_by_the_given_batch(trained, make_df):
    trainer, model = trained
    x = make_df(1, batch=7)[0][0]
    logits, = trainer.get_predictor("x", "logits")(x)  # label (not needed for logits) gets zeros
    assert logits.shape == (7, 2)
    np.testing.assert_allclose(logits, x @ model.fc.kernel.numpy() + model.fc.bias.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("outputs", [["accuracy"], ["logits", "accuracy"], ["cost"]])
def test_an_output_computed_from_a_left_out_input_is_refused_when_the_predictor_is_built(trained, outputs):
    # accuracy and cost compare with the labels: zeros in their place would give a number, silently wrong
    trainer, _ = trained
    with pytest.raises(InputSignatureError) as err:
        trainer.get_predictor(["x"], outputs)
    needing = [name for name in outputs if name != "logits"]
    for name in needing:
        assert f"output {name!r} is computed from ['label']" in str(err.value)
    assert "'logits'" not in str(err.value).split("not among")[0]  # logits does not need the label
    assert "add them to input_names" in str(err.value)
    # given the label, the same outputs are fine
    assert len(trainer.get_predictor(["x", "label"], outputs).output_names) == len(outputs)


def test_bad_arrays_name_the_input_and_its_spec(trained, make_df):
    trainer, _ = trained
    pred = trainer.get_predictor(["x", "label"], ["accuracy"])
    x, label = make_df(1)[0]
    with pytest.raises(InputSignatureError, match=r"input 'x' expects dtype float32 and shape \(None, 4\)"):
        pred(x[:, :3], label)
    with pytest.raises(InputSignatureError, match=r"input 'label' expects dtype int32 .*float32.*NaN"):
        pred(x, np.full(label.shape, np.nan, "float32"))  # (a float label is converted, as tensorpack's feed did)
    with pytest.raises(InputSignatureError, match=r"takes 2 arrays \['x', 'label'\], got 1"):
        pred(x)


def test_unknown_names_fail_when_the_predictor_is_built(trained):
    trainer, _ = trained
    with pytest.raises(KeyError, match=r"no tensor named 'probs' in tower 'predict_tower0'.*'accuracy'"):
        trainer.get_predictor(["x", "label"], ["probs"])
    with pytest.raises(KeyError, match=r"input 'image' is neither an input of the tower function"):
        trainer.get_predictor(["image"], ["logits"])
    with pytest.raises(TypeError, match="list of names"):
        trainer.get_predictor([], ["logits"])


def test_get_predictors_builds_one_tower_per_device(trained, make_df):
    trainer, model = trained
    preds = trainer.get_predictors(["x"], ["logits"], 2)
    assert [p.tower_name for p in preds] == ["predict_tower0", "predict_tower1"]
    x = make_df(1)[0][0]
    np.testing.assert_allclose(preds[0](x)[0], preds[1](x)[0], rtol=1e-6)
    with pytest.raises(ValueError, match="positive"):
        trainer.get_predictors(["x"], ["logits"], 0)


def test_a_predictor_tower_may_not_create_variables(classifier, dataflow, setup):
    class InferenceHead(classifier):
        def build_graph(self, x, label):
            if not get_current_tower_context().is_training:
                keras.layers.Dense(1, name="late_head")(x)  # a layer only inference towers make
            return super().build_graph(x, label)

    trainer = setup(SimpleTrainer(), InferenceHead(), dataflow)
    with pytest.raises(VariableReuseError, match=r"tower 'predict_tower0' tried to create variable "
                                                 r"'late_head/kernel': only the first tower \('tower0'\)"):
        trainer.get_predictor(["x"], ["logits"])


def test_a_left_out_input_of_unknown_shape_that_an_output_needs_must_be_given():
    class TwoInputs(ModelDesc):
        def __init__(self):
            self.fc = keras.layers.Dense(1)

        def inputs(self):
            return [tf.TensorSpec([None, 2], tf.float32, "a"), tf.TensorSpec([None, None], tf.float32, "b")]

        def build_graph(self, a, b):
            return tf.identity(tf.reduce_sum(self.fc(a)) + tf.reduce_sum(b), name="out")

    model = TwoInputs()
    tower_func = TowerFunc(model.build_graph, model.get_input_signature())
    # b's zeros would be (3, 1): 'out' sums them, so the predictor refuses, naming b
    with pytest.raises(InputSignatureError, match=r"output 'out' is computed from \['b'\].*add them to input_names"):
        OnlinePredictor(tower_func, ["a"], ["out"])
    pred = OnlinePredictor(tower_func, ["a", "b"], ["out"])
    out, = pred(np.ones([3, 2], "float32"), np.ones([3, 5], "float32"))
    kernel, bias = model.fc.kernel.numpy(), model.fc.bias.numpy()
    assert out == pytest.approx(np.sum(np.ones([3, 2]) @ kernel + bias) + 15.0, rel=1e-5)


def test_predictor_devices_without_gpus_are_the_cpu():
    if tf.config.list_logical_devices("GPU"):
        pytest.skip("this machine has GPUs: see test_predictors_run_on_gpus")
    assert predict_device(0) == predict_device(3) == "/device:CPU:0"
    with pytest.raises(ValueError, match="non-negative"):
        predict_device(-1)


@pytest.mark.gpu
@pytest.mark.skipif(not tf.config.list_physical_devices("GPU"), reason="needs a GPU")
def test_predictors_run_on_gpus(trained, make_df):
    trainer, model = trained
    last = len(tf.config.list_logical_devices("GPU")) - 1
    pred = trainer.get_predictor(["x"], ["logits"], device=last)
    assert pred.device == f"/device:GPU:{last}"
    graph = pred._fn.get_concrete_function().graph
    matmuls = [op for op in graph.get_operations() if op.type == "MatMul"]
    assert matmuls and all(op.device.endswith(f"GPU:{last}") for op in matmuls)
    x = make_df(1)[0][0]
    np.testing.assert_allclose(pred(x)[0], x @ model.fc.kernel.numpy() + model.fc.bias.numpy(),
                               rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="does not exist"):
        trainer.get_predictor(["x"], ["logits"], device=last + 1)


def test_a_left_out_input_with_unknown_dimensions_stands_unknown_and_its_outputs_are_refused():
    """An edge map of unknown height and width (tensorpack's HED: ``[None, None, None]``) left out of a
    predictor of the side outputs: its zeros are 1 in those dimensions, and to the traced code they stay
    unknown (a mask shaped like the image is compared with it); an output that needs it is refused."""
    class Edges(ModelDesc):
        def __init__(self):
            self.conv = keras.layers.Conv2D(1, 3, padding="same", name="conv")

        def inputs(self):
            return [tf.TensorSpec([None, None, None, 3], tf.float32, "image"),
                    tf.TensorSpec([None, None, None], tf.int32, "edgemap")]

        def build_graph(self, image, edgemap):
            assert edgemap.shape.as_list() == [None, None, None]   # as declared, in every trace
            logits = self.conv(image)
            prob = tf.sigmoid(logits, name="output")
            wrong = tf.not_equal(tf.cast(prob > 0.5, tf.int32), tf.expand_dims(edgemap, 3))
            tf.reduce_mean(tf.cast(wrong, tf.float32), name="error")
            return tf.reduce_mean(logits, name="cost")

    model = Edges()
    func = TowerFunc(model.build_graph, model.get_input_signature())
    pred = OnlinePredictor(func, ["image"], ["output"])
    image = np.random.RandomState(0).rand(2, 8, 12, 3).astype("float32")
    out, = pred(image)
    kernel, bias = model.conv.kernel.numpy(), model.conv.bias.numpy()
    want = tf.sigmoid(tf.nn.conv2d(image, kernel, 1, "SAME") + bias).numpy()
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)
    with pytest.raises(InputSignatureError, match=r"output 'error' is computed from \['edgemap'\]"):
        OnlinePredictor(func, ["image"], ["output", "error"])
