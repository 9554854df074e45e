"""Checkpoint keys do not depend on how the tower function is given, and a predictor that
restores fewer than all of its model's variables is an error, not a warning."""
from __future__ import annotations

import functools
import logging

import keras
import numpy as np
import pytest
import tensorflow as tf

from trainstack.callbacks import ModelSaver
from trainstack.inputs import FeedInput
from trainstack.towers import (
    ModelDesc,
    OfflinePredictor,
    PredictConfig,
    SimpleTrainer,
    TowerFunc,
    get_current_tower_context,
)


class Regressor(ModelDesc):
    def __init__(self, hidden=8):
        self.body = keras.layers.Dense(hidden, activation="tanh")
        self.head = keras.layers.Dense(1)

    def inputs(self):
        return [tf.TensorSpec([None, 3], tf.float32, "x"), tf.TensorSpec([None], tf.float32, "y")]

    def build_graph(self, x, y):
        get_current_tower_context()
        pred = tf.identity(self.head(self.body(x))[:, 0], name="pred")
        return tf.reduce_mean(tf.square(pred - y), name="cost")

    def optimizer(self):
        return keras.optimizers.SGD(0.1)


#: the model's keys: by attribute (body, head), never Keras's per-process names (dense_3, ...)
EXPECTED_KEYS = [f"model/{layer}/{var}/.ATTRIBUTES/VARIABLE_VALUE" for layer in ("body", "head")
                 for var in ("_kernel", "bias")]


def data(n=6, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        x = rng.normal(size=(8, 3)).astype(np.float32)
        out.append([x, x.sum(1).astype(np.float32)])
    return out


def train(tower_fn, model, tmp_path):
    keras.layers.Dense(4)  # shift Keras's per-process layer numbering between runs
    trainer = SimpleTrainer()
    trainer.setup_graph(model.get_input_signature(), FeedInput(data()), tower_fn, model.get_optimizer)
    trainer.train_with_defaults(callbacks=[ModelSaver(checkpoint_dir=str(tmp_path))], monitors=[],
                                max_epoch=1)
    return trainer


def make_plain(model):
    def get_cost(x, y):  # a plain function, as tensorpack's multi-GPU GAN trainer's get_cost
        return model.build_graph(x, y)
    return get_cost


@pytest.mark.parametrize("wrap", ["method", "plain", "partial", "towerfunc"])
def test_keys_follow_the_model_however_the_tower_function_is_given(wrap, tmp_path):
    model = Regressor()
    tower_fn = {"method": model.build_graph, "plain": make_plain(model),
                "partial": functools.partial(Regressor.build_graph, model),
                "towerfunc": TowerFunc(make_plain(model), model.get_input_signature())}[wrap]
    trainer = train(tower_fn, model, tmp_path)
    keys = sorted(k for k, _ in tf.train.list_variables(str(tmp_path)) if k.startswith("model/"))
    assert keys == EXPECTED_KEYS

    # a predictor of a new instance of the model restores every variable and predicts as the trainer
    pred = OfflinePredictor(PredictConfig(model=Regressor(), input_names=["x"], output_names=["pred"],
                                          session_init=str(tmp_path)))
    assert len(pred.config.session_init.report.restored) == 4
    x = np.random.default_rng(3).normal(size=(5, 3)).astype(np.float32)
    online = trainer.get_predictor(["x"], ["pred"])
    np.testing.assert_allclose(pred(x)[0], online(x)[0], rtol=1e-6)
    # ... and not as an untrained model would
    fresh = OfflinePredictor(PredictConfig(model=Regressor(), input_names=["x"], output_names=["pred"]))
    assert not np.allclose(fresh(x)[0], online(x)[0])


def test_plain_function_over_layers_keys_them_by_their_names_in_the_function(tmp_path):
    body, head = keras.layers.Dense(4, activation="tanh"), keras.layers.Dense(1)

    def get_cost(x, y):
        return tf.reduce_mean(tf.square(tf.identity(head(body(x))[:, 0], name="pred") - y))

    signature = Regressor().get_input_signature()
    trainer = SimpleTrainer()
    trainer.setup_graph(signature, FeedInput(data()), get_cost, lambda: keras.optimizers.SGD(0.1))
    keys = sorted(tf.train.Checkpoint(**trainer.checkpoint_objects).save(str(tmp_path / "c")) and
                  [k for k, _ in tf.train.list_variables(str(tmp_path / "c-1")) if k.startswith("model/")])
    assert keys == EXPECTED_KEYS


def test_restoring_missing_variables_into_a_predictor_raises(tmp_path):
    train(Regressor(hidden=8).build_graph, Regressor(hidden=8), tmp_path)

    class Bigger(Regressor):
        def __init__(self):
            super().__init__()
            self.extra = keras.layers.Dense(3)

        def build_graph(self, x, y):
            return super().build_graph(self.extra(x), y)

    with pytest.raises(ValueError, match=r"set 4 of the 6 variables.*extra") as info:
        OfflinePredictor(PredictConfig(model=Bigger(), input_names=["x"], output_names=["pred"],
                                       session_init=str(tmp_path)))
    assert "model/extra/_kernel" in str(info.value)  # the missing ones, by checkpoint key
    assert "model/body/_kernel" in str(info.value)  # what the checkpoint holds

    # a checkpoint of another model: nothing restored
    other = tmp_path / "other"
    tf.train.Checkpoint(model=tf.Module()).save(str(other / "ckpt"))
    with pytest.raises(ValueError, match="set 0 of the 4 variables"):
        OfflinePredictor(PredictConfig(model=Regressor(), input_names=["x"], output_names=["pred"],
                                       session_init=str(other)))
    # a dict missing a variable
    with pytest.raises(ValueError, match="set 0 of the 4"):
        OfflinePredictor(PredictConfig(model=Regressor(), input_names=["x"], output_names=["pred"],
                                       session_init={"nothing": np.zeros(3)}))


def test_renaming_the_closure_variable_holding_the_model_keeps_the_checkpoint_keys(tmp_path, caplog):
    """The keys come from what the ModelDesc declares, not from the local name the function reads
    it by; finding the model by reflection is a fallback that warns and names what it found."""
    def keys_of(get_cost, model, directory):
        with caplog.at_level(logging.WARNING, logger="trainstack.towers"):
            train(get_cost, model, directory)
        return sorted(k for k, _ in tf.train.list_variables(str(directory)) if k.startswith("model/"))

    model = Regressor()

    def get_cost(x, y):
        return model.build_graph(x, y)

    first = keys_of(get_cost, model, tmp_path / "a")
    warned = [r.getMessage() for r in caplog.records if "declares no owner" in r.getMessage()]
    assert len(warned) == 1 and "Regressor" in warned[0] and "owner=model" in warned[0]

    renamed_model = Regressor()  # the same script, its local renamed

    def get_cost(x, y):  # noqa: F811 - the renamed version of the function above
        return renamed_model.build_graph(x, y)

    assert keys_of(get_cost, renamed_model, tmp_path / "b") == first == EXPECTED_KEYS
