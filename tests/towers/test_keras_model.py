"""ModelDesc.from_keras: a keras.Model with a loss and an optimizer trained as it is, through
launch_train_with_config. SimpleTrainer ends where ``model.fit`` ends on the same batches; two
towers where one tower ends on the batches concatenated; the metrics reach stats.jsonl; a
predictor and a SavedModel give ``model(x)``; errors name what to pass instead.

The models and the multi-device cases are in keras_model_cases.py (the multi-device worker
of multigpu_cases.py imports it).
"""
from __future__ import annotations

import json
import os

import keras
import keras_model_cases as cases
import numpy as np
import pytest
import tensorflow as tf

from trainstack.inputs import TFDatasetInput
from trainstack.towers import (
    InferenceRunner,
    KerasModelDesc,
    ModelDesc,
    OfflinePredictor,
    PredictConfig,
    ScalarStats,
    SimpleTrainer,
    TrainConfig,
    export_saved_model,
    launch_train_with_config,
)

LOSS = "sparse_categorical_crossentropy"


def fit_reference(model, batches):
    """``model.fit`` on ``batches`` in order (one epoch), from the weights the model has."""
    x = np.concatenate([b[0] for b in batches])
    y = np.concatenate([b[1] for b in batches])
    model.fit(x, y, batch_size=len(batches[0][0]), epochs=1, shuffle=False, verbose=0)
    return cases.weights(model)


@pytest.mark.parametrize("kind, input_kind", [("functional", "dataflow"), ("functional", "data"),
                                              ("subclassed", "dataflow")])
def test_simple_trainer_ends_where_model_fit_ends(kind, input_kind):
    batches = cases.make_batches(5)
    model = cases.functional(l2=0.01) if kind == "functional" else cases.subclassed()
    inputs = None if kind == "functional" else [tf.TensorSpec([None, 4], tf.float32, "x")]
    model.compile(optimizer=keras.optimizers.SGD(0.2), loss=keras.losses.SparseCategoricalCrossentropy(
        from_logits=True), metrics=["accuracy"])
    reference = cases.functional(l2=0.01) if kind == "functional" else cases.subclassed()
    reference.compile(optimizer=keras.optimizers.SGD(0.2), loss=keras.losses.SparseCategoricalCrossentropy(
        from_logits=True))
    expected = fit_reference(reference, batches)

    desc = ModelDesc.from_keras(model, inputs=inputs)  # loss, optimizer and metrics of model.compile
    assert isinstance(desc, KerasModelDesc)
    assert [(s.name, s.dtype, s.shape.as_list()) for s in desc.get_input_signature()] == \
        [("x", tf.float32, [None, 4]), ("label", tf.int32, [None])]
    source = dict(dataflow=batches) if input_kind == "dataflow" else dict(data=TFDatasetInput(
        tf.data.Dataset.from_tensor_slices(tuple(np.stack(p) for p in zip(*batches)))))
    trainer = SimpleTrainer()
    launch_train_with_config(TrainConfig(model=desc, steps_per_epoch=len(batches), max_epoch=1,
                                         callbacks=[], monitors=[], **source), trainer)
    moved = max(np.abs(a - b).max() for a, b in zip(cases.weights(model), cases.initial_weights(kind)))
    assert moved > 1e-2
    assert len(expected) == len(model.weights)
    for got, want in zip(cases.weights(model), expected):
        np.testing.assert_allclose(got, want, rtol=cases.RTOL, atol=cases.ATOL)


@pytest.mark.parametrize("trainer, kind", [("SyncMultiGPUTrainerReplicated", "functional"),
                                           ("SyncMultiGPUTrainerReplicated", "subclassed"),
                                           ("SyncMultiGPUTrainerParameterServer", "functional")])
def test_two_towers_end_where_one_tower_ends_on_the_concatenated_batches(cpus, trainer, kind):
    assert cpus.run(cases.two_towers_equal_one_on_both_batches, trainer, kind) > 1e-2


def test_loss_and_metrics_reach_stats_jsonl(logger_dir):
    def error(label, logits):  # a function metric: one value per datapoint, averaged over the batch
        return tf.cast(tf.argmax(logits, axis=1, output_type=tf.int32) != label, tf.float32)

    desc = ModelDesc.from_keras(cases.functional(), keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                                "sgd", metrics=["accuracy", error, keras.metrics.SparseTopKCategoricalAccuracy(
                                    k=3, name="top3")])
    validation = InferenceRunner(cases.make_batches(2, seed=5), [ScalarStats(["loss", "accuracy"])])
    launch_train_with_config(TrainConfig(model=desc, dataflow=cases.make_batches(4), max_epoch=2,
                                         callbacks=[validation]), SimpleTrainer())
    with open(os.path.join(logger_dir, "stats.jsonl")) as f:
        last = [json.loads(line) for line in f][-1]
    assert {"loss", "accuracy", "error", "top3", "validation_loss", "validation_accuracy"} <= set(last)
    assert 0 < last["accuracy"] < 1
    assert last["loss"] > 0
    assert last["accuracy"] + last["error"] == pytest.approx(1.0, abs=1e-5)
    assert last["top3"] == pytest.approx(1.0)  # 3 classes: the true one is always in the top 3


@pytest.mark.parametrize("kind", ["functional", "subclassed"])
def test_predictor_and_saved_model_give_model_of_x(logger_dir, tmp_path, kind):
    from trainstack.callbacks import ModelSaver

    model = cases.make_model(kind)
    launch_train_with_config(TrainConfig(model=cases.adapt(model), dataflow=cases.make_batches(4),
                                         callbacks=[ModelSaver()], max_epoch=1, monitors=[]), SimpleTrainer())
    x = cases.make_batches(1, batch=5, seed=7)[0][0]
    expected = np.asarray(model(x))

    fresh = cases.make_model(kind)  # its initial weights: the checkpoint must replace them
    config = PredictConfig(model=cases.adapt(fresh), session_init=logger_dir, input_names=["x"],
                           output_names=["output"])
    predicted = OfflinePredictor(config)(x)[0]
    np.testing.assert_allclose(predicted, expected, rtol=1e-6, atol=1e-6)
    untrained = cases.make_model(kind)
    assert np.abs(expected - np.asarray(untrained(x))).max() > 1e-3

    path = export_saved_model(config, str(tmp_path / "export"))
    served = tf.saved_model.load(path).signatures["serving_default"](x=tf.constant(x))["output"]
    np.testing.assert_allclose(served.numpy(), expected, rtol=1e-6, atol=1e-6)


# -- errors ---------------------------------------------------------------------------------------
def test_an_uncompiled_model_without_loss_names_what_to_pass():
    with pytest.raises(ValueError, match=r"no loss and no optimizer given and the model is not compiled.*"
                                         r"model\.compile"):
        ModelDesc.from_keras(cases.functional())
    with pytest.raises(ValueError, match="no optimizer given"):
        ModelDesc.from_keras(cases.functional(), loss=LOSS)
    compiled = cases.functional()
    compiled.compile(optimizer="sgd")
    with pytest.raises(ValueError, match=r"model.compile\(\) was given no loss; pass loss="):
        ModelDesc.from_keras(compiled)


def test_a_subclassed_model_without_input_specs_names_inputs():
    with pytest.raises(ValueError, match=r"subclassed model.*pass inputs=\[tf.TensorSpec"):
        ModelDesc.from_keras(cases.subclassed(), LOSS, "sgd")


@pytest.mark.parametrize("loss, match", [
    ({"out": LOSS}, "a loss per output"),
    (3, "unsupported kind"),
    ("no_such_loss", "unknown loss 'no_such_loss'"),
    (lambda y, p: tf.reduce_mean(p), r"cannot tell the label's shape and dtype.*label=tf.TensorSpec"),
])
def test_a_loss_of_an_unsupported_kind_is_refused(loss, match):
    with pytest.raises((TypeError, ValueError), match=match):
        ModelDesc.from_keras(cases.functional(), loss, "sgd")


def test_a_custom_loss_trains_with_the_label_spec_given():
    model = cases.functional()
    label = tf.TensorSpec([None], tf.int32, "y")

    def loss(y, logits):
        return keras.losses.sparse_categorical_crossentropy(y, logits, from_logits=True)

    desc = ModelDesc.from_keras(model, loss, keras.optimizers.SGD(0.2), label=label)
    assert desc.input_names == ["x", "y"]
    trainer = SimpleTrainer()
    launch_train_with_config(TrainConfig(model=desc, dataflow=cases.make_batches(3), max_epoch=1,
                                         callbacks=[], monitors=[]), trainer)
    reference = cases.functional()
    reference.compile(optimizer=keras.optimizers.SGD(0.2), loss=loss)
    for got, want in zip(cases.weights(model), fit_reference(reference, cases.make_batches(3))):
        np.testing.assert_allclose(got, want, rtol=cases.RTOL, atol=cases.ATOL)


def test_accuracy_after_a_loss_that_does_not_say_which_is_refused():
    with pytest.raises(ValueError, match="does not say which accuracy"):
        ModelDesc.from_keras(cases.functional(), "mse", "sgd", metrics=["accuracy"])


def test_a_model_with_two_outputs_is_refused_when_built():
    x = keras.Input((4,), name="x")
    model = keras.Model(x, [keras.layers.Dense(3)(x), keras.layers.Dense(3)(x)])
    desc = ModelDesc.from_keras(model, lambda y, p: 0.0, "sgd", label=tf.TensorSpec([None], tf.int32, "label"))
    with pytest.raises(TypeError, match="several outputs"):
        launch_train_with_config(TrainConfig(model=desc, dataflow=cases.make_batches(2), max_epoch=1,
                                             callbacks=[], monitors=[]), SimpleTrainer())
