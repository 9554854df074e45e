"""tensorpack's ``BatchRenorm`` (issue 24): TF1's ``tf.layers.BatchNormalization(renorm=True)`` variable names,
its renorm formula step by step against NumPy (the formula of TF 1.x's ``_renorm_correction_and_moments``, written
out below), the updates by the main training tower only, and inference on the moving averages."""
from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from trainstack.tensorpack.tf1 import BatchRenorm, TowerContext, TowerFunc

RNG = np.random.default_rng(3)
TOL = dict(rtol=2e-5, atol=2e-5)
NAMES = ["gamma", "beta", "moving_mean", "moving_variance", "renorm_mean", "renorm_mean_weight", "renorm_stddev",
         "renorm_stddev_weight"]


class Tower:
    """``body(x)`` as a tower function, built and run as training tower ``tower<index>`` or the inference tower."""

    def __init__(self, body, shape):
        self.func = TowerFunc(body, [tf.TensorSpec(shape, tf.float32, "x")])
        self._fn = tf.function(self._build)

    def _build(self, x, training, index):
        with TowerContext(f"tower{index}" if training else "", is_training=training, index=index):
            return self.func(x)

    def run(self, x, training=True, index=0):
        return tf.nest.map_structure(lambda t: t.numpy(), self._fn(tf.constant(x), training=training, index=index))

    @property
    def variables(self) -> dict:
        return {v.name.split(":")[0]: v for v in self.func.variables}

    def values(self, layer: str) -> dict:
        return {n: self.variables[f"{layer}/{n}"].numpy() for n in NAMES[2:]}


class RenormNumpy:
    """TF 1.x's renorm (``fused=False``): ``r``, ``d`` from the renorm averages before the step (mixed with the
    batch's moments by ``1 - weight``), clipped; then the renorm averages (momentum 0.99) and, from their unbiased
    values, the moving mean and variance (``momentum``)."""

    def __init__(self, state: dict, axes, rmax, dmax, momentum=0.9, epsilon=1e-5):
        self.v = {k: np.array(v, "float64") for k, v in state.items()}
        self.axes, self.rmax, self.dmax, self.momentum, self.eps = axes, rmax, dmax, momentum, epsilon

    def train(self, x, gamma, beta, update=True):
        v, eps = self.v, self.eps
        mean, var = x.mean(axis=self.axes), x.var(axis=self.axes)
        std = np.sqrt(var + eps)
        m = v["renorm_mean"] + (1 - v["renorm_mean_weight"]) * mean
        s = v["renorm_stddev"] + (1 - v["renorm_stddev_weight"]) * std
        r = np.clip(std / s, 1 / self.rmax, self.rmax)
        d = np.clip((mean - m) / s, -self.dmax, self.dmax)
        bc = self._broadcast(x)
        out = ((x - bc(mean)) / bc(std) * bc(r) + bc(d)) * gamma + beta
        if update:
            for key, value in (("renorm_mean", mean), ("renorm_mean_weight", 1.0), ("renorm_stddev", std),
                               ("renorm_stddev_weight", 1.0)):
                v[key] = v[key] - (v[key] - value) * 0.01
            new_mean = v["renorm_mean"] / v["renorm_mean_weight"]
            new_var = (v["renorm_stddev"] / v["renorm_stddev_weight"]) ** 2 - eps
            v["moving_mean"] = v["moving_mean"] - (v["moving_mean"] - new_mean) * (1 - self.momentum)
            v["moving_variance"] = v["moving_variance"] - (v["moving_variance"] - new_var) * (1 - self.momentum)
        return out, r, d

    def infer(self, x, gamma, beta):
        bc = self._broadcast(x)
        return (x - bc(self.v["moving_mean"])) / np.sqrt(bc(self.v["moving_variance"]) + self.eps) * gamma + beta

    def _broadcast(self, x):
        shape = [1 if a in self.axes else n for a, n in enumerate(x.shape)]
        return lambda v: np.reshape(v, shape)


def assert_state(tower, layer, ref):
    for name, value in tower.values(layer).items():
        np.testing.assert_allclose(value, ref.v[name], **TOL, err_msg=name)


@pytest.mark.parametrize("shape, data_format", [((6, 3), "channels_last"), ((4, 2, 2, 3), "channels_last"),
                                                ((4, 3, 2, 2), "channels_first")])
def test_batch_renorm_is_tf1s_renorm_formula_step_by_step_and_infers_on_the_moving_averages(shape, data_format):
    rmax, dmax = 1.5, 0.4
    axis = 1 if len(shape) == 2 or data_format == "channels_first" else 3
    axes = tuple(a for a in range(len(shape)) if a != axis)
    bshape = [1] * len(shape)
    bshape[axis] = 3
    tower = Tower(lambda x: BatchRenorm("brn", x, rmax=rmax, dmax=dmax, data_format=data_format),
                  [None, *shape[1:]])
    rng = np.random.default_rng(3)   # each case its own data, whichever cases ran before it
    batches = [(rng.normal(size=shape) * scale + shift).astype("float32")
               for scale, shift in ((1.0, 0.0), (3.0, 2.0), (0.5, -1.0), (2.0, 0.5))]

    tower.run(batches[0], training=False)  # the inference tower first: it creates the variables
    assert list(tower.variables) == [f"brn/{n}" for n in NAMES]
    assert [v.trainable for v in tower.variables.values()] == [True, True] + [False] * 6
    ref = RenormNumpy(tower.values("brn"), axes, rmax, dmax)
    np.testing.assert_array_equal(ref.v["moving_variance"], 1)
    np.testing.assert_array_equal(ref.v["renorm_stddev_weight"], 0)
    gamma, beta = rng.uniform(0.5, 2, size=3).astype("float32"), rng.normal(size=3).astype("float32")
    tower.variables["brn/gamma"].assign(gamma)
    tower.variables["brn/beta"].assign(beta)
    g, b = gamma.reshape(bshape), beta.reshape(bshape)

    # step 1 from zero-weight averages: r = 1, d = 0, plain batch normalization
    out, r, d = ref.train(batches[0], g, b)
    np.testing.assert_array_equal((r, d), (np.ones(3), np.zeros(3)))
    np.testing.assert_allclose(tower.run(batches[0]), out, **TOL)
    assert_state(tower, "brn", ref)

    # a loaded state (weights 1) against which the next batches need corrections: r and d clip on some channels
    state = {"renorm_mean": [0.0, 2.0, -0.3], "renorm_mean_weight": 1.0, "renorm_stddev": [1.0, 3.5, 0.4],
             "renorm_stddev_weight": 1.0}
    for name, value in state.items():
        tower.variables[f"brn/{name}"].assign(np.asarray(value, "float32"))
        ref.v[name] = np.asarray(value, "float64")
    clipped_r, clipped_d = [], []
    for x in batches[1:3]:
        out, r, d = ref.train(x, g, b)
        clipped_r.extend(np.isclose(r, rmax) | np.isclose(r, 1 / rmax))
        clipped_d.extend(np.isclose(np.abs(d), dmax))
        np.testing.assert_allclose(tower.run(x), out, **TOL)
        assert_state(tower, "brn", ref)
    # the case exercises both sides of each clip
    assert 0 < sum(clipped_r) < len(clipped_r) and 0 < sum(clipped_d) < len(clipped_d), (clipped_r, clipped_d)

    # a second training tower uses the same corrections but updates nothing (tensorpack's UPDATE_OPS: main tower)
    before = tower.values("brn")
    out, _, _ = ref.train(batches[3], g, b, update=False)
    np.testing.assert_allclose(tower.run(batches[3], index=1), out, **TOL)
    for name, value in tower.values("brn").items():
        np.testing.assert_array_equal(value, before[name], err_msg=name)

    # inference: the moving averages, no correction, no update
    np.testing.assert_allclose(tower.run(batches[3], training=False), ref.infer(batches[3], g, b), **TOL)
    assert_state(tower, "brn", ref)


def test_batch_renorm_options_and_errors_are_tensorpacks():
    x = (RNG.normal(size=(8, 2, 2, 3)) * 2 + 1).astype("float32")

    def body(x):
        plain = BatchRenorm("plain", x, rmax=tf.constant(2.0), dmax=tf.constant(1.0), decay=0.5, use_scale=False,
                            use_bias=False)
        init = BatchRenorm("init", x, rmax=3, dmax=5, gamma_init=tf.compat.v1.constant_initializer(2.0))
        return plain, init

    tower = Tower(body, [None, 2, 2, 3])
    plain, init = tower.run(x)
    v = tower.variables
    assert "plain/gamma" not in v and "plain/beta" not in v
    np.testing.assert_array_equal(v["init/gamma"].numpy(), 2.0)
    mean, var = x.mean(axis=(0, 1, 2)), x.var(axis=(0, 1, 2))
    np.testing.assert_allclose(plain, (x - mean) / np.sqrt(var + 1e-5), **TOL)
    np.testing.assert_allclose(init, 2 * (x - mean) / np.sqrt(var + 1e-5), **TOL)
    # decay= is the moving averages' momentum: after one step, moving_mean = 0.5 * the batch mean
    np.testing.assert_allclose(v["plain/moving_mean"].numpy(), 0.5 * mean, **TOL)
    np.testing.assert_allclose(v["init/moving_mean"].numpy(), 0.1 * mean, **TOL)

    with pytest.raises(TypeError, match="at most 0 positional arguments"):  # tensorpack: rmax, dmax by keyword
        Tower(lambda x: BatchRenorm("brn", x, 3.0, 5.0), [None, 3]).run(np.ones((2, 3), "float32"))
    with pytest.raises(ValueError, match=r"BatchRenorm\('brn'\) takes a 2D \(NC\) or 4D input"):
        Tower(lambda x: BatchRenorm("brn", x, rmax=3, dmax=5), [None, 2, 3]).run(np.ones((2, 2, 3), "float32"))
    with pytest.raises(RuntimeError, match=r"BatchRenorm\(.brn.\) must be called inside the tower function"):
        BatchRenorm("brn", tf.ones([2, 3]), rmax=3, dmax=5)
