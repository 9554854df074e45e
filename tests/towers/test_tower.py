"""TowerContext, TowerFunc and its handles, and the variable reuse rule."""
from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from trainstack.inputs import InputSignatureError
from trainstack.loop.checks import check_number
from trainstack.towers import TowerContext, TowerFunc, TracedStep, VariableReuseError, get_current_tower_context

SIG = [tf.TensorSpec([None, 3], tf.float32, "x")]


def traced(fn, signature=SIG):
    """Trace ``fn`` once in a tf.function taking ``signature`` (builds whatever it builds)."""
    return tf.function(fn, input_signature=list(signature)).get_concrete_function()


def test_context_attributes_and_current():
    assert get_current_tower_context() is None
    with TowerContext("tower1", is_training=True, index=1) as ctx:
        assert get_current_tower_context() is ctx
        assert (ctx.name, ctx.is_training, ctx.index) == ("tower1", True, 1)
        assert not ctx.is_main_training_tower
    assert get_current_tower_context() is None
    assert TowerContext("tower0", True).is_main_training_tower
    assert not TowerContext("predict", False).is_main_training_tower


def test_context_opens_a_name_scope_and_does_not_nest():
    names = {}

    def fn(x):
        with TowerContext("tower0", True):
            names["op"] = tf.identity(x, name="out").name
            with pytest.raises(RuntimeError, match="do not nest"):
                with TowerContext("tower1", True):
                    pass
        return x

    traced(fn)
    assert names["op"] == "tower0/out:0"
    assert get_current_tower_context() is None


def test_tower_func_needs_a_context_and_the_right_number_of_inputs():
    tf_fn = TowerFunc(lambda x: x, SIG)
    with pytest.raises(RuntimeError, match="TowerContext"):
        tf_fn(tf.zeros([1, 3]))
    with TowerContext("tower0", True), pytest.raises(InputSignatureError, match=r"takes 1 inputs \['x'\]"):
        tf_fn(tf.zeros([1, 3]), tf.zeros([1]))


def test_handles_record_inputs_outputs_and_named_tensors():
    dense = keras.layers.Dense(2)

    def build(x):
        y = dense(x)
        tf.identity(tf.reduce_mean(y), name="accuracy")
        return y

    tower_func = TowerFunc(build, SIG)
    seen = {}

    def fn(x):
        for name, training, index in [("tower0", True, 0), ("tower1", True, 1), ("pred", False, 0)]:
            with TowerContext(name, training, index):
                out = tower_func(x)
            handle = tower_func.towers[name]
            assert handle.outputs is out
            assert handle.inputs == [x]
            assert handle.get_tensor("x") is x
            seen[name] = handle.get_tensor("accuracy").name
            assert handle.get_tensors(["accuracy:0"])[0].name == seen[name]
        with pytest.raises(KeyError, match=r"no tensor named 'nope' in tower 'tower1'.*'accuracy'"):
            tower_func.towers["tower1"].get_tensor("nope")
        return out

    traced(fn)
    assert seen == {"tower0": "tower0/accuracy:0", "tower1": "tower1/accuracy:0", "pred": "pred/accuracy:0"}
    assert [h.name for h in tower_func.towers.training()] == ["tower0", "tower1"]
    assert [h.name for h in tower_func.towers.inference()] == ["pred"]
    assert "tower1" in tower_func.towers and len(tower_func.towers) == 3
    with pytest.raises(KeyError, match="no tower named 'tower7'"):
        tower_func.towers["tower7"]


def test_variables_are_created_by_the_first_tower_without_its_name_scope():
    dense = keras.layers.Dense(2, name="fc")
    tower_func = TowerFunc(lambda x: dense(x), SIG)

    def fn(x):
        with TowerContext("tower0", True):
            a = tower_func(x)
        with TowerContext("tower1", True, 1):
            b = tower_func(x)  # reuses: no error
        return a + b

    traced(fn)
    assert [v.name for v in tower_func.variables] == ["fc/kernel:0", "fc/bias:0"]
    assert [id(v) for v in tower_func.trainable_variables] == [id(v) for v in tower_func.variables]
    assert {id(w.value) for w in dense.weights} == {id(v) for v in tower_func.variables}


def test_a_second_tower_creating_a_variable_fails_naming_it_and_the_tower():
    holder = {}

    def build(x):
        ctx = get_current_tower_context()
        if ctx.index == 1 and "extra" not in holder:
            holder["extra"] = tf.Variable(1.0, name="extra")
        return x

    tower_func = TowerFunc(build, SIG)

    def fn(x):
        with TowerContext("tower0", True):
            tower_func(x)
        with TowerContext("tower1", True, 1):
            tower_func(x)
        return x

    with pytest.raises(VariableReuseError, match=r"tower 'tower1' tried to create variable 'extra'.*"
                                                 r"only the first tower \('tower0'\)"):
        traced(fn)


def test_a_later_call_creating_variables_fails_naming_them():
    # a layer made inside the tower function makes new variables on every call
    tower_func = TowerFunc(lambda x: keras.layers.Dense(2, name="inline")(x), SIG)

    def fn(x):
        with TowerContext("tower0", True):
            return tower_func(x)

    with pytest.raises(VariableReuseError, match=r"tower 'tower0' tried to create variable "
                                                 r"'inline/kernel' on a later call"):
        traced(fn)  # tf.function traces twice when the first trace creates variables


def test_eager_towers_follow_the_same_rule():
    tower_func = TowerFunc(lambda x: keras.layers.Dense(2, name="eager_fc")(x), SIG)
    with TowerContext("tower0", True):
        tower_func(tf.ones([1, 3]))
    assert [v.name for v in tower_func.variables] == ["eager_fc/kernel:0", "eager_fc/bias:0"]
    with TowerContext("tower1", True, 1):
        with pytest.raises(VariableReuseError, match="'tower1'.*eager_fc/kernel"):
            tower_func(tf.ones([1, 3]))
    handle = tower_func.towers["tower0"]
    with pytest.raises(KeyError, match="built eagerly"):
        handle.get_tensor("anything")


def test_an_inference_tower_built_first_creates_the_variables():
    dense = keras.layers.Dense(2)
    tower_func = TowerFunc(lambda x: dense(x), SIG)

    def fn(x):
        with TowerContext("predict_tower0", is_training=False):
            a = tower_func(x)
        with TowerContext("tower0", is_training=True):
            b = tower_func(x)
        return a - b

    concrete = traced(fn)
    assert len(tower_func.variables) == 2
    np.testing.assert_allclose(concrete(tf.ones([2, 3])).numpy(), 0.0)


def test_frozen_keras_layers_are_not_trainable():
    class Model:
        def __init__(self):
            self.a = keras.layers.Dense(2, name="frozen_a")
            self.b = keras.layers.Dense(2, name="trained_b")

        def build(self, x):
            return self.b(self.a(x))

    model = Model()
    model.a.trainable = False
    tower_func = TowerFunc(model.build, SIG)
    with TowerContext("tower0", True):
        tower_func(tf.ones([1, 3]))
    assert len(tower_func.variables) == 4
    assert [v.name for v in tower_func.trainable_variables] == ["trained_b/kernel:0", "trained_b/bias:0"]


def test_checkpoint_module_keys_follow_attribute_names(tmp_path):
    class Model:
        def __init__(self):
            self.fc = keras.layers.Dense(2)
            self.blocks = [keras.layers.Dense(2), keras.layers.Dense(2)]
            self.scale = tf.Variable(2.0, name="scale")
            self.note = "not a trackable"

        def build(self, x):
            y = self.fc(x)
            for block in self.blocks:
                y = block(y)
            return y * self.scale * holder.setdefault("v", tf.Variable(1.0, name="unowned"))

    holder = {}
    model = Model()
    tower_func = TowerFunc(model.build, SIG)
    with pytest.raises(RuntimeError, match="not built a tower yet"):
        tower_func.checkpoint_module
    with TowerContext("tower0", True):
        tower_func(tf.ones([1, 3]))
    module = tower_func.checkpoint_module
    keys = {name for name, _ in tf.train.list_variables(
        tf.train.Checkpoint(model=module).write(str(tmp_path / "ckpt")))}
    assert "model/fc/_kernel/.ATTRIBUTES/VARIABLE_VALUE" in keys
    assert "model/blocks/1/bias/.ATTRIBUTES/VARIABLE_VALUE" in keys
    assert "model/scale/.ATTRIBUTES/VARIABLE_VALUE" in keys
    assert "model/untracked/unowned/.ATTRIBUTES/VARIABLE_VALUE" in keys
    assert not any("note" in k for k in keys)
    # every variable once, as tf.Variables, for name lookups
    assert len(module.variables) == 2 + 4 + 1 + 1
    assert all(isinstance(v, tf.Variable) for v in module.variables)


def test_a_traced_steps_fetched_scalar_is_a_number_and_a_fetched_vector_an_array():
    """TracedStep converts its fetches with the callbacks' to_numpy: a scalar is a NumPy scalar (a
    number to check_number, as monitors need), a vector an array."""
    v = tf.Variable([1.0, 2.0])

    def body(feeds, fetches):
        values = {"sum": tf.reduce_sum(v), "vector": v.read_value()}
        return tf.constant(0.0), {name: values[name] for name in fetches}

    _, values = TracedStep(body, {}).run_with_fetches((), ["sum", "vector"], {})
    assert isinstance(values["sum"], np.float32) and check_number("put_scalar", "value", values["sum"]) == 3.0
    assert isinstance(values["vector"], np.ndarray) and values["vector"].tolist() == [1.0, 2.0]
