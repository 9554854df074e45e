"""``Dropout`` with its rate as a scalar tensor (issue 24), as cifar-convnet.py writes it:
``Dropout(rate=tf.constant(0.5 if self.training else 0.0))``; a computed rate is read in the step."""
from __future__ import annotations

import numpy as np
import tensorflow as tf

from trainstack.tensorpack.tf1 import Dropout, TowerContext, TowerFunc


def run(body, x, rate, training=True):
    func = TowerFunc(body, [tf.TensorSpec([None, 1000], tf.float32, "x"), tf.TensorSpec([], tf.float32, "rate")])

    @tf.function
    def fn(x, rate):
        with TowerContext("tower0" if training else "", is_training=training):
            return func(x, rate)

    return fn(tf.constant(x), tf.constant(rate)).numpy()


def test_dropout_takes_a_constant_or_a_computed_rate_tensor():
    x = np.ones((4, 1000), "float32")
    # cifar-convnet.py's constant: 0.0 passes the input through; 0.5 drops about half and scales by 2
    np.testing.assert_array_equal(run(lambda x, r: Dropout(x, rate=tf.constant(0.0)), x, 0.0), x)
    half = run(lambda x, r: Dropout(x, rate=tf.constant(0.5)), x, 0.0)
    assert set(np.unique(half)) <= {0.0, 2.0} and 0.4 < (half == 0).mean() < 0.6
    # a rate computed in the step (an input here): each value applies
    for rate in (0.0, 0.25, 0.75):
        out = run(lambda x, r: Dropout(x, rate=r), x, rate)
        assert abs((out == 0).mean() - rate) < 0.05, rate
        np.testing.assert_allclose(out[out != 0], 1 / (1 - rate), rtol=1e-6)
    # keep_prob as a tensor (tensorpack's older form); inference towers pass through whatever the rate
    out = run(lambda x, r: Dropout(x, keep_prob=tf.constant(0.8)), x, 0.0)
    assert abs((out == 0).mean() - 0.2) < 0.05
    np.testing.assert_array_equal(run(lambda x, r: Dropout(x, rate=r), x, 0.5, training=False), x)
