"""``variables_of``: the one rule for the variables an object of a trainer's ``checkpoint_objects``
holds (ModelSaver's check for non-finite values, the elastic trainer's committed state and the Ray
trainer's check used three copies, none reaching a declared list or dict of layers)."""
from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

from trainstack.callbacks import variables_of
from trainstack.callbacks.saver import _non_finite


def _ids(variables):
    return sorted(id(v) for v in variables)


def test_every_kind_of_checkpoint_object_gives_its_variables():
    layer = keras.layers.Dense(2)
    layer.build((None, 3))
    other = keras.layers.Dense(1)
    other.build((None, 2))
    assert _ids(variables_of(layer)) == _ids(layer.variables)
    assert _ids(variables_of([layer, {"head": other}])) == _ids([*layer.variables, *other.variables])
    plain = tf.Variable(1.0)
    assert variables_of(plain) == [plain]
    module = tf.Module()
    module.v = tf.Variable(2.0)
    assert variables_of(module) == [module.v]
    optimizer = keras.optimizers.SGD(0.1, momentum=0.9)
    optimizer.build(layer.trainable_variables)
    assert len(variables_of(optimizer)) == len(optimizer.variables) > 0
    generator = tf.random.Generator.from_seed(1)  # a trackable without `variables`: its attributes
    assert [v.shape for v in variables_of(generator)] == [generator.state.shape]


def test_a_non_finite_value_in_a_declared_list_of_layers_is_found_by_its_path():
    layer = keras.layers.Dense(2, name="enc")
    layer.build((None, 3))
    layer.kernel.assign(np.full((3, 2), np.nan, np.float32))
    assert _non_finite({"layers": [layer]}) == "layers/enc/kernel"
    assert _non_finite({"layers": [keras.layers.Dense(1)]}) is None
