"""trainstack.callbacks.tf_private: every private TensorFlow and Keras API of the core, in one module.
On this TensorFlow and Keras every one of them is there (no fallback taken); a fallback is counted
and logged; a missing API without one is a PrivateAPIError naming it."""
from __future__ import annotations

import logging

import keras
import pytest
import tensorflow as tf

from trainstack.callbacks import tf_private


@pytest.fixture(autouse=True)
def fresh_counts():
    before = tf_private.fallbacks_taken()
    tf_private.reset_fallbacks()
    yield
    tf_private.reset_fallbacks()
    tf_private._fallbacks.update(before)


def test_every_private_api_is_there_on_this_tensorflow():
    """Fails on a TensorFlow or Keras where one of them is gone or changed: the upgrade is loud."""
    assert tf_private.unavailable() == {}
    assert tf_private.fallbacks_taken() == {}


def test_the_versions_in_use_are_the_checked_ones():
    """A new TensorFlow or Keras fails here until the private APIs were checked with it (run this
    module's tests, then update CHECKED_WITH)."""
    assert f"TensorFlow {tf.__version__}," in tf_private.CHECKED_WITH, tf_private.CHECKED_WITH
    assert f"Keras {keras.__version__}" in tf_private.CHECKED_WITH, tf_private.CHECKED_WITH


def test_every_entry_says_who_uses_it_and_why():
    for name, api in tf_private.PRIVATE_APIS.items():
        assert api.name == name and api.used_by and len(api.why) > 20


def test_a_fallback_is_counted_and_logged_once(caplog):
    class NoFlatCall:  # a ConcreteFunction of a TensorFlow without _call_flat
        captured_inputs = ()

    with caplog.at_level(logging.WARNING, logger="trainstack.callbacks"):
        assert tf_private.flat_caller(NoFlatCall()) is None
        assert tf_private.flat_caller(NoFlatCall()) is None
    assert tf_private.fallbacks_taken() == {"ConcreteFunction._call_flat": 2}
    warnings = [r.getMessage() for r in caplog.records if "_call_flat" in r.getMessage()]
    assert len(warnings) == 1 and "Falling back: the public call: slower" in warnings[0]
    assert tf.__version__ in warnings[0] and tf_private.CHECKED_WITH in warnings[0]


def test_a_missing_api_without_fallback_is_an_error_naming_it(monkeypatch):
    def moved():
        raise ImportError("No module named 'tensorflow.python.eager.context'")

    monkeypatch.setattr(tf_private, "_eager_context_module", moved)
    with pytest.raises(tf_private.PrivateAPIError, match=r"tensorflow\.python\.eager\.context\.eager_mode is "
                       r"missing or changed in TensorFlow .*\(tensorpack\.tf1\.eager\)"):
        tf_private.eager_mode()
    assert "the step's fast paths" in tf_private.unavailable(distribute=False)


def test_probing_takes_no_fallback_into_the_count():
    tf_private._fall_back("ConcreteFunction._call_flat", "a test")
    assert tf_private.unavailable(distribute=False) == {}
    assert tf_private.fallbacks_taken() == {"ConcreteFunction._call_flat": 1}


def test_the_wrappers_do_what_the_private_calls_did():
    fn = tf.function(lambda x, y: x * y).get_concrete_function(tf.TensorSpec([], tf.float32),
                                                               tf.TensorSpec([], tf.float32))
    assert float(tf_private.flat_caller(fn)([tf.constant(3.0), tf.constant(4.0)])) == 12.0
    schedule = keras.optimizers.schedules.ExponentialDecay(0.1, 10, 0.5)
    assert tf_private.learning_rate_is_schedule(keras.optimizers.SGD(schedule))
    assert not tf_private.learning_rate_is_schedule(keras.optimizers.SGD(0.1))
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2), keras.layers.Dropout(0.5),
                              keras.layers.GaussianNoise(0.1)])
    assert len(tf_private.layer_seed_generators(model)) == 2
    assert isinstance(tf.Variable(1.0), tf_private.Trackable)
    assert tf_private.new_trackable_object_graph().nodes is not None
