"""tensorpack's layer functions (issue 24), each against its formula in NumPy on a small input, built in a
tower as a tensorpack model builds them: tensorpack 0.11's signatures, defaults and variable names."""
from __future__ import annotations

import types

import keras
import numpy as np
import pytest
import tensorflow as tf

from trainstack.tensorpack.tf1 import (
    AvgPooling,
    BatchNorm,
    BNReLU,
    Conv2D,
    Conv2DTranspose,
    Deconv2D,
    Dropout,
    FixedUnPooling,
    FullyConnected,
    GlobalAvgPooling,
    InstanceNorm,
    LayerNorm,
    LinearWrap,
    Maxout,
    MaxPooling,
    PReLU,
    TowerContext,
    TowerFunc,
    argscope,
    enable_argscope_for_function,
    enable_argscope_for_module,
    freeze_variables,
    get_arg_scope,
    layer_register,
    remap_variables,
)

RNG = np.random.default_rng(0)
TOL = dict(rtol=1e-5, atol=1e-5)


class Tower:
    """``body(*inputs)`` as a tower function; ``run(*arrays, training=..., index=...)`` builds and runs
    tower ``tower<index>`` (training) or the inference tower ``''``, traced in a tf.function."""

    def __init__(self, body, *shapes):
        self.func = TowerFunc(body, [tf.TensorSpec(s, tf.float32, f"x{i}") for i, s in enumerate(shapes)])
        self._fn = tf.function(self._build)

    def _build(self, *xs, training, index):
        with TowerContext(f"tower{index}" if training else "", is_training=training, index=index):
            return self.func(*xs)

    def run(self, *xs, training=True, index=0):
        out = self._fn(*[tf.constant(x, tf.float32) for x in xs], training=training, index=index)
        return tf.nest.map_structure(lambda t: t.numpy(), out)

    @property
    def variables(self) -> dict:
        return {v.name.split(":")[0]: v for v in self.func.variables}

    def set(self, **values) -> None:
        """Assign variables by name (``conv0__W`` for ``conv0/W``)."""
        for name, value in values.items():
            self.variables[name.replace("__", "/")].assign(value)


def conv2d_np(x, w, stride, padding):
    """NHWC convolution with TensorFlow's 'SAME' padding (the extra row/column after)."""
    n, h, wd, _ = x.shape
    kh, kw, _, f = w.shape
    if padding == "same":
        oh, ow = -(-h // stride), -(-wd // stride)
        ph, pw = max((oh - 1) * stride + kh - h, 0), max((ow - 1) * stride + kw - wd, 0)
        x = np.pad(x, [(0, 0), (ph // 2, ph - ph // 2), (pw // 2, pw - pw // 2), (0, 0)])
    else:
        oh, ow = (h - kh) // stride + 1, (wd - kw) // stride + 1
    out = np.zeros((n, oh, ow, f))
    for i in range(oh):
        for j in range(ow):
            patch = x[:, i * stride:i * stride + kh, j * stride:j * stride + kw, :]
            out[:, i, j, :] = np.tensordot(patch, w, axes=([1, 2, 3], [0, 1, 2]))
    return out


CONV_CASES = [(1, "same"), (2, "same"), (1, "valid"), (2, "valid")]


def test_conv2d_is_the_convolution_formula_for_each_padding_and_stride():
    x = RNG.normal(size=(2, 5, 5, 3)).astype("float32")

    def body(x):
        outs = [Conv2D(f"conv_{s}_{p}", x, 4, 3, strides=s, padding=p, activation=tf.nn.relu) for s, p in CONV_CASES]
        nchw = Conv2D("conv_nchw", tf.transpose(x, [0, 3, 1, 2]), 4, 3, data_format="NCHW")
        no_bias = Conv2D("conv_nobias", x, 4, kernel_shape=3, use_bias=False)
        return outs, tf.transpose(nchw, [0, 2, 3, 1]), no_bias

    tower = Tower(body, [None, 5, 5, 3])
    tower.run(x)
    w = RNG.normal(size=(3, 3, 3, 4)).astype("float32")
    b = RNG.normal(size=4).astype("float32")
    for name in [f"conv_{s}_{p}" for s, p in CONV_CASES] + ["conv_nchw"]:
        tower.set(**{f"{name}__W": w, f"{name}__b": b})
    tower.set(conv_nobias__W=w)
    outs, nchw, no_bias = tower.run(x)
    for (stride, padding), out in zip(CONV_CASES, outs):
        np.testing.assert_allclose(out, np.maximum(conv2d_np(x, w, stride, padding) + b, 0), **TOL)
    np.testing.assert_allclose(nchw, conv2d_np(x, w, 1, "same") + b, **TOL)  # channels_first: the same numbers
    np.testing.assert_allclose(no_bias, conv2d_np(x, w, 1, "same"), **TOL)
    assert "conv_nobias/b" not in tower.variables


def test_conv2d_groups_and_defaults_are_tensorpacks():
    x = RNG.normal(size=(2, 4, 4, 4)).astype("float32")
    tower = Tower(lambda x: (Conv2D("group", x, 6, 3, split=2), Conv2D("big", x, 64, 5)), [None, 4, 4, 4])
    tower.run(x)
    w = RNG.normal(size=(3, 3, 2, 6)).astype("float32")
    tower.set(group__W=w)
    grouped, _ = tower.run(x)
    expected = np.concatenate([conv2d_np(x[..., :2], w[..., :3], 1, "same"),
                               conv2d_np(x[..., 2:], w[..., 3:], 1, "same")], axis=-1)
    np.testing.assert_allclose(grouped, expected, **TOL)  # split=2: each half of the channels by its kernels
    # W: variance scaling 2.0 over the fan-in (5*5*4), untruncated normal; b: zeros
    big = tower.variables["big/W"].numpy()
    assert big.shape == (5, 5, 4, 64)
    std = np.sqrt(2.0 / 100)
    assert big.std() == pytest.approx(std, rel=0.08) and abs(big.mean()) < 0.1 * std
    assert np.abs(big).max() > 2.5 * std  # not truncated at two standard deviations
    np.testing.assert_array_equal(tower.variables["big/b"].numpy(), 0)


def test_conv2d_transpose_matches_keras_conv2d_transpose_from_the_same_weights():
    x = RNG.normal(size=(2, 3, 3, 2)).astype("float32")
    cases = [("same", 2), ("valid", 2), ("same", 1)]
    tower = Tower(lambda x: [Conv2DTranspose(f"deconv_{p}_{s}", x, 4, 3, s, padding=p) for p, s in cases]
                  + [LinearWrap(x).Deconv2D("alias", 4, 3, strides=2)()], [None, 3, 3, 2])
    tower.run(x)
    w = RNG.normal(size=(3, 3, 4, 2)).astype("float32")
    b = RNG.normal(size=4).astype("float32")
    for p, s in cases:
        tower.set(**{f"deconv_{p}_{s}__W": w, f"deconv_{p}_{s}__b": b})
    outs = tower.run(x)
    for (padding, stride), out, size in zip(cases, outs, (6, 7, 3)):  # in*s, or in*s + max(k - s, 0) if valid
        layer = keras.layers.Conv2DTranspose(4, 3, strides=stride, padding=padding)
        layer.build((None, 3, 3, 2))
        layer.set_weights([w, b])
        assert out.shape == (2, size, size, 4)
        np.testing.assert_allclose(out, layer(x).numpy(), **TOL)
    assert outs[-1].shape == (2, 6, 6, 4) and tower.variables["alias/W"].shape == (3, 3, 4, 2)
    assert Deconv2D is Conv2DTranspose


def test_fully_connected_flattens_and_multiplies():
    x = RNG.normal(size=(3, 2, 2, 2)).astype("float32")
    tower = Tower(lambda x: (FullyConnected("fc", x, 5, activation=tf.nn.tanh),
                             FullyConnected("fc_old", x, out_dim=2, nl=tf.nn.relu, use_bias=False)), [None, 2, 2, 2])
    tower.run(x)
    w = RNG.normal(size=(8, 5)).astype("float32")
    b = RNG.normal(size=5).astype("float32")
    tower.set(fc__W=w, fc__b=b)
    out, old = tower.run(x)
    np.testing.assert_allclose(out, np.tanh(x.reshape(3, 8) @ w + b), **TOL)
    np.testing.assert_allclose(old, np.maximum(x.reshape(3, 8) @ tower.variables["fc_old/W"].numpy(), 0), **TOL)
    assert sorted(tower.variables) == ["fc/W", "fc/b", "fc_old/W"]


# -- BatchNorm ----------------------------------------------------------------------------------------------
def bn_np(x, mean, var, gamma, beta, eps=1e-5):
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


@pytest.mark.parametrize("shape", [(4, 3, 3, 2), (5, 2)], ids=["4d", "2d"])
def test_batch_norm_trains_on_batch_statistics_and_infers_on_their_moving_averages(shape):
    x = (RNG.normal(size=shape) * 3 + 1).astype("float32")
    axes = tuple(range(len(shape) - 1))
    tower = Tower(lambda x: BatchNorm("bn", x), [None, *shape[1:]])
    tower.run(x, training=False)  # the inference tower first: it creates the variables
    assert list(tower.variables) == ["bn/gamma", "bn/beta", "bn/mean/EMA", "bn/variance/EMA"]
    assert [v.trainable for v in tower.variables.values()] == [True, True, False, False]
    gamma, beta = RNG.uniform(0.5, 2, size=2).astype("float32"), RNG.normal(size=2).astype("float32")
    tower.set(bn__gamma=gamma, bn__beta=beta)

    # inference: the moving averages (0, 1 at first), no update
    np.testing.assert_allclose(tower.run(x, training=False), bn_np(x, 0, 1, gamma, beta), **TOL)
    np.testing.assert_array_equal(tower.variables["bn/mean/EMA"].numpy(), 0)

    # training: the batch's statistics; the averages move by momentum 0.9 within the step
    out = tower.run(x, training=True)
    mean, var = x.mean(axis=axes), x.var(axis=axes)
    np.testing.assert_allclose(out, bn_np(x, mean, var, gamma, beta), rtol=1e-4, atol=1e-4)
    n = x.size // 2
    # 4D: TensorFlow's fused kernel averages the unbiased variance (as tensorpack's tf.layers did); 2D: biased
    averaged_var = var * n / (n - 1) if len(shape) == 4 else var
    np.testing.assert_allclose(tower.variables["bn/mean/EMA"].numpy(), 0.1 * mean, **TOL)
    np.testing.assert_allclose(tower.variables["bn/variance/EMA"].numpy(), 0.9 + 0.1 * averaged_var, **TOL)
    ema = (0.1 * mean, 0.9 + 0.1 * averaged_var)

    # a second training tower (index 1) normalizes by its batch but does not update, as in tensorpack
    tower.run(x, training=True, index=1)
    np.testing.assert_allclose(tower.variables["bn/mean/EMA"].numpy(), ema[0], **TOL)
    np.testing.assert_allclose(tower.run(x, training=False), bn_np(x, *ema, gamma, beta), rtol=1e-4, atol=1e-4)


def test_batch_norm_options_are_tensorpacks():
    x = (RNG.normal(size=(8, 2, 2, 3)) * 2).astype("float32")

    def body(x):
        skip = BatchNorm("skip", x, ema_update="skip")
        frozen = BatchNorm("frozen", x, training=False)  # a loaded BatchNorm fine-tuned in a training tower
        nchw = BatchNorm("nchw", tf.transpose(x, [0, 3, 1, 2]), data_format="channels_first", use_scale=False,
                         decay=0.5)
        ghost = BatchNorm("ghost", x, virtual_batch_size=4)
        return skip, frozen, tf.transpose(nchw, [0, 2, 3, 1]), ghost

    tower = Tower(body, [None, 2, 2, 3])
    skip, frozen, nchw, ghost = tower.run(x)
    v = tower.variables
    mean, var = x.mean(axis=(0, 1, 2)), x.var(axis=(0, 1, 2))
    np.testing.assert_allclose(skip, bn_np(x, mean, var, 1, 0), rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(v["skip/mean/EMA"].numpy(), 0)
    np.testing.assert_allclose(frozen, bn_np(x, 0, 1, 1, 0), **TOL)
    np.testing.assert_array_equal(v["frozen/mean/EMA"].numpy(), 0)
    np.testing.assert_allclose(nchw, bn_np(x, mean, var, 1, 0), rtol=1e-4, atol=1e-4)
    assert "nchw/gamma" not in v
    np.testing.assert_allclose(v["nchw/mean/EMA"].numpy(), 0.5 * mean, **TOL)  # decay= is momentum
    groups = x.reshape(2, 4, 2, 2, 3)
    g_mean, g_var = groups.mean(axis=(1, 2, 3), keepdims=True), groups.var(axis=(1, 2, 3), keepdims=True)
    np.testing.assert_allclose(ghost, ((groups - g_mean) / np.sqrt(g_var + 1e-5)).reshape(x.shape), rtol=1e-4,
                               atol=1e-4)
    np.testing.assert_allclose(v["ghost/mean/EMA"].numpy(), 0.1 * g_mean[0].ravel(), **TOL)  # the first group's
    # SyncBN with one tower: the batch's own statistics, E[x^2] - E[x]^2 (the 2-tower case: test_tf1_layers_training)
    synced = Tower(lambda x: BatchNorm("bn", x, sync_statistics="NCCL"), [None, 2, 2, 3]).run(x)
    np.testing.assert_allclose(synced, bn_np(x, mean, var, 1, 0), rtol=1e-4, atol=1e-4)
    # 'horovod' outside HorovodTrainer (the 2-process case: tests/distributed/test_horovod_sync_bn.py)
    with pytest.raises(ValueError, match="sync_statistics='horovod' needs HorovodTrainer"):
        Tower(lambda x: BatchNorm("bn", x, sync_statistics="horovod"), [None, 2]).run(np.ones((2, 2)))
    with pytest.raises(ValueError, match="sync_statistics must be None, 'nccl'.*or 'horovod'.*got 'mpi'"):
        Tower(lambda x: BatchNorm("bn", x, sync_statistics="mpi"), [None, 2]).run(np.ones((2, 2)))
    with pytest.raises(ValueError, match="ema_update must be one of"):
        Tower(lambda x: BatchNorm("bn", x, ema_update="sometimes"), [None, 2]).run(np.ones((2, 2)))


def test_a_small_model_in_layer_functions_gives_the_same_outputs_as_in_keras_layers():
    x = RNG.normal(size=(4, 6, 6, 2)).astype("float32")

    def body(x):
        with argscope([Conv2D, MaxPooling, BatchNorm], data_format="channels_last"):
            return (LinearWrap(x).Conv2D("conv0", 3, 3, activation=BNReLU).MaxPooling("pool0", 2)
                    .FullyConnected("fc0", 5)())

    tower = Tower(body, [None, 6, 6, 2])
    tower.run(x, training=False)
    conv = keras.layers.Conv2D(3, 3, padding="same")
    bn = keras.layers.BatchNormalization(momentum=0.9, epsilon=1e-5)
    fc = keras.layers.Dense(5)
    conv.build((None, 6, 6, 2))
    bn.build((None, 6, 6, 3))
    fc.build((None, 27))
    bn.set_weights([RNG.uniform(0.5, 2, 3), RNG.normal(size=3), RNG.normal(size=3) * 0.1, RNG.uniform(0.5, 2, 3)])
    names = ["conv0/W", "conv0/b", "conv0/bn/gamma", "conv0/bn/beta", "conv0/bn/mean/EMA", "conv0/bn/variance/EMA",
             "fc0/W", "fc0/b"]
    for name, weight in zip(names, [*conv.weights, *bn.weights, *fc.weights]):
        tower.variables[name].assign(weight.numpy())  # the layer functions' weights are Keras's
    assert list(tower.variables) == names

    def keras_model(training):
        h = tf.nn.relu(bn(conv(x), training=training))
        return fc(tf.reshape(tf.nn.max_pool2d(h, 2, 2, "VALID"), [4, -1])).numpy()

    np.testing.assert_allclose(tower.run(x, training=False), keras_model(False), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(tower.run(x, training=True), keras_model(True), rtol=1e-4, atol=1e-4)
    # both moved their moving mean by the same batch mean
    np.testing.assert_allclose(tower.variables["conv0/bn/mean/EMA"].numpy(), bn.moving_mean.numpy(), **TOL)


# -- the other normalizations, pooling, nonlinearities, dropout ------------------------------------------------
def test_layer_norm_and_instance_norm_normalize_each_sample():
    x = (RNG.normal(size=(3, 2, 2, 4)) * 2 + 1).astype("float32")
    tower = Tower(lambda x: (LayerNorm("ln", x), LayerNorm("ln2d", tf.reshape(x, [3, 16]), use_scale=False),
                             InstanceNorm("inorm", x), InstanceNorm("plain", x, use_affine=False)), [None, 2, 2, 4])
    tower.run(x)
    gamma, beta = RNG.uniform(0.5, 2, size=4).astype("float32"), RNG.normal(size=4).astype("float32")
    tower.set(ln__gamma=gamma, ln__beta=beta, inorm__gamma=gamma, inorm__beta=beta)
    ln, ln2d, inorm, plain = tower.run(x)
    m, v = x.mean(axis=(1, 2, 3), keepdims=True), x.var(axis=(1, 2, 3), keepdims=True)
    np.testing.assert_allclose(ln, bn_np(x, m, v, gamma, beta), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(ln2d, bn_np(x, m, v, 1, 0).reshape(3, 16), rtol=1e-4, atol=1e-4)
    m, v = x.mean(axis=(1, 2), keepdims=True), x.var(axis=(1, 2), keepdims=True)
    np.testing.assert_allclose(inorm, bn_np(x, m, v, gamma, beta), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(plain, bn_np(x, m, v, 1, 0), rtol=1e-4, atol=1e-4)
    assert sorted(tower.variables) == ["inorm/beta", "inorm/gamma", "ln/beta", "ln/gamma", "ln2d/beta"]


def test_pooling_layers_are_their_formulas():
    x = RNG.normal(size=(2, 5, 5, 3)).astype("float32")
    mat = np.array([[1.0, 2.0], [0.0, -1.0]], "float32")
    tower = Tower(lambda x: (MaxPooling("max", x, 2), MaxPooling("max_same", x, 3, stride=2, padding="SAME"),
                             AvgPooling("avg_same", x, shape=2, padding="same"), GlobalAvgPooling("gap", x),
                             FixedUnPooling("unpool", x, 2), FixedUnPooling("unpool_mat", x, 2, unpool_mat=mat),
                             tf.transpose(MaxPooling("max_nchw", tf.transpose(x, [0, 3, 1, 2]), 2,
                                                     data_format="NCHW"), [0, 2, 3, 1])), [None, 5, 5, 3])
    mx, mx_same, avg_same, gap, unpool, unpool_mat, mx_nchw = tower.run(x)
    np.testing.assert_allclose(mx, x[:, :4, :4].reshape(2, 2, 2, 2, 2, 3).max(axis=(2, 4)), **TOL)
    np.testing.assert_allclose(mx_nchw, mx, **TOL)
    padded = np.pad(x, [(0, 0), (1, 1), (1, 1), (0, 0)], constant_values=-np.inf)  # 'SAME': 1 each side
    np.testing.assert_allclose(mx_same, np.stack([np.stack([padded[:, 2 * i:2 * i + 3, 2 * j:2 * j + 3].max(axis=(1, 2))
                                                            for j in range(3)], 1) for i in range(3)], 1), **TOL)
    # an average over a 'same' border counts only the input's elements
    padded = np.pad(x, [(0, 0), (0, 1), (0, 1), (0, 0)], constant_values=np.nan)
    windows = np.stack([np.stack([padded[:, 2 * i:2 * i + 2, 2 * j:2 * j + 2] for j in range(3)], 1) for i in range(3)], 1)
    np.testing.assert_allclose(avg_same, np.nanmean(windows, axis=(3, 4)), **TOL)
    np.testing.assert_allclose(gap, x.mean(axis=(1, 2)), **TOL)
    corner = np.zeros((2, 2), "float32")
    corner[0, 0] = 1
    for out, m in ((unpool, corner), (unpool_mat, mat)):
        expected = np.stack([np.stack([np.kron(x[b, :, :, c], m) for c in range(3)], -1) for b in range(2)])
        np.testing.assert_allclose(out, expected, **TOL)
    assert tower.variables == {}


def test_nonlinearities_are_their_formulas():
    x = RNG.normal(size=(4, 2, 2, 6)).astype("float32")
    tower = Tower(lambda x: (PReLU("prelu", x), BNReLU("bnrelu", x), Maxout(x, 3),
                             Maxout("maxout2d", tf.reshape(x, [4, 24]), 2)), [None, 2, 2, 6])
    tower.run(x)
    np.testing.assert_allclose(tower.variables["prelu/alpha"].numpy(), 0.001)  # tensorpack's init
    tower.set(prelu__alpha=0.25)
    prelu, bnrelu, maxout, maxout2d = tower.run(x)
    np.testing.assert_allclose(prelu, np.where(x > 0, x, 0.25 * x), **TOL)
    m, v = x.mean(axis=(0, 1, 2)), x.var(axis=(0, 1, 2))
    np.testing.assert_allclose(bnrelu, np.maximum(bn_np(x, m, v, 1, 0), 0), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(maxout, x.reshape(4, 2, 2, 2, 3).max(axis=-1), **TOL)
    np.testing.assert_allclose(maxout2d, x.reshape(4, 12, 2).max(axis=-1), **TOL)
    assert sorted(tower.variables) == ["bnrelu/bn/beta", "bnrelu/bn/gamma", "bnrelu/bn/mean/EMA",
                                       "bnrelu/bn/variance/EMA", "prelu/alpha"]


def test_dropout_drops_by_rate_in_training_and_passes_in_inference():
    x = np.ones((100, 100), "float32")
    tower = Tower(lambda x: (Dropout("drop", x, rate=0.3), Dropout(x, 0.8), Dropout(x, keep_prob=0.4),
                             Dropout(x), Dropout(x, rate=0.3, is_training=False)), [None, 100])
    for out, rate in zip(tower.run(x), (0.3, 0.2, 0.6, 0.5, 0.0)):
        kept = out != 0
        assert kept.mean() == pytest.approx(1 - rate, abs=0.03)
        np.testing.assert_allclose(out[kept], 1 / (1 - rate), rtol=1e-5)  # kept values scaled by 1/keep
    for out in tower.run(x, training=False):  # an inference tower: the input as it is
        np.testing.assert_array_equal(out, x)
    with pytest.raises(TypeError, match="keep_prob and rate both given"):
        Tower(lambda x: Dropout(x, keep_prob=0.5, rate=0.5), [None, 2]).run(np.ones((1, 2)))


# -- argscope, layer_register, LinearWrap ------------------------------------------------------------------
def test_argscope_gives_defaults_that_explicit_and_positional_arguments_override():
    x = RNG.normal(size=(1, 4, 4, 2)).astype("float32")
    seen = {}

    def body(x):
        with argscope(Conv2D, kernel_shape=3, nl=tf.nn.relu, out_channel=5):  # tensorpack's old names too
            a = Conv2D("a", x)
            b = Conv2D("b", x, 7, 1)  # positional arguments override the scope's
            with argscope([Conv2D, FullyConnected], use_bias=False):
                c = Conv2D("c", x, out_channel=2)  # (filters=2 would conflict with the scope's out_channel,
                #                                   tensorpack's "Argument out_channel and filters conflicts")
                seen["inner"] = {k: dict(v) for k, v in get_arg_scope().items()}
            seen["outer"] = dict(get_arg_scope()["Conv2D"])
        return a, b, c

    tower = Tower(body, [None, 4, 4, 2])
    a, b, c = tower.run(x)
    v = tower.variables
    assert v["a/W"].shape == (3, 3, 2, 5) and v["b/W"].shape == (1, 1, 2, 7) and v["c/W"].shape == (3, 3, 2, 2)
    assert "c/b" not in v and a.min() >= 0  # nl=relu
    assert seen["inner"]["FullyConnected"] == {"use_bias": False}
    assert seen["outer"] == {"kernel_shape": 3, "nl": tf.nn.relu, "out_channel": 5}
    assert dict(get_arg_scope()) == {}  # nothing left after the tower
    with pytest.raises(TypeError, match="not a layer function"):
        with argscope(tf.nn.relu, alpha=1):
            pass


def test_layer_register_and_enable_argscope_for_function_work_as_tensorpacks():
    @layer_register(log_shape=True)
    def add_w(x, init=1.0):
        return x + tf.compat.v1.get_variable("W", [3], initializer=tf.compat.v1.constant_initializer(init))

    def scale(x, factor=1.0):
        return x * factor

    scale = enable_argscope_for_function(scale)
    x = np.ones((2, 3), "float32")

    def body(x):
        with argscope(add_w, init=2.0), argscope(scale, factor=3.0):
            return (LinearWrap(x).add_w("adder").apply(scale).tf.nn.relu().apply2(add_w, "again", init=-10.0)
                    .tf.math.abs()())

    tower = Tower(body, [None, 3])
    np.testing.assert_allclose(tower.run(x), np.abs((1 + 2.0) * 3 - 10.0))
    assert sorted(tower.variables) == ["adder/W", "again/W"]
    with pytest.raises(TypeError, match="first argument must be the layer's name"):
        Tower(lambda x: add_w(x), [None, 3]).run(x)
    with pytest.raises(AttributeError, match="neither a registered layer nor 'tf'"):
        LinearWrap(tf.ones([1])).NoSuchLayer("x")
    for _ in range(2):  # the same function defined again (in code run on every trace) replaces itself
        @layer_register(use_scope=None)
        def twice(x):
            return x

    assert LinearWrap(tf.ones([1])).twice()() is not None

    def other():
        @layer_register(use_scope=None)
        def twice(x):  # another function of the same name: tensorpack's conflict
            return x

    other()
    with pytest.raises(KeyError, match="'twice' was registered with @layer_register more than once"):
        LinearWrap(tf.ones([1])).twice()
    mine = types.ModuleType("mine")
    mine.triple = lambda x, factor=1.0: x * factor * 3
    enable_argscope_for_module(mine)
    with argscope(mine.triple, factor=2.0):
        assert mine.triple(1.0) == 6.0
    with pytest.raises(TypeError, match="replaces nothing in TensorFlow"):  # the room patches nothing there
        enable_argscope_for_module(tf.nn)


def test_the_same_layer_name_twice_in_a_tower_is_tf1s_error_and_later_towers_reuse():
    x = np.ones((1, 2), "float32")
    with pytest.raises(ValueError, match="Variable fc/W already exists, disallowed"):
        Tower(lambda x: FullyConnected("fc", FullyConnected("fc", x, 2), 2), [None, 2]).run(x)
    tower = Tower(lambda x: FullyConnected("fc", x, 2), [None, 2])
    first = tower.run(x)
    np.testing.assert_allclose(tower.run(x, index=1), first)  # tower1 uses tower0's variables
    np.testing.assert_allclose(tower.run(x, training=False), first)
    assert list(tower.variables) == ["fc/W", "fc/b"]


def test_layers_outside_a_tower_and_bad_arguments_are_clear_errors():
    with pytest.raises(RuntimeError, match=r"Conv2D\('conv0'\) must be called inside the tower function"):
        Conv2D("conv0", tf.ones([1, 4, 4, 1]), 2, 3)
    with pytest.raises(RuntimeError, match=r"Dropout\(\) must be called inside the tower function"):
        Dropout(tf.ones([2, 2]))
    bad = [(lambda x: Conv2D("c", x, 2, 3, padding="full"), "padding must be 'same' or 'valid'"),
           (lambda x: Conv2D("c", x, 2, 3, data_format="NDHWC"), "expected 'channels_last'"),
           (lambda x: Conv2D("c", x, 2, 3, kernel_regularizer=tf.nn.l2_loss), "regularize_cost"),
           (lambda x: Conv2D("c", x, 2, 3, 1), "at most 2 positional arguments"),
           (lambda x: Conv2D("c", x, 2, 3, out_channel=2, filters=2), "name the same argument")]
    for body, message in bad:
        with pytest.raises((ValueError, TypeError), match=message):
            Tower(body, [None, 4, 4, 1]).run(np.ones((1, 4, 4, 1)))


# -- varreplace: custom getters -----------------------------------------------------------------------------
def test_remap_variables_maps_the_variables_requested_in_its_block():
    x = RNG.normal(size=(3, 4)).astype("float32")

    def body(x):
        with remap_variables(lambda v: v * 2):
            with remap_variables(lambda v: v + 1):  # TF1's order: the inner getter maps the outer's: 2v + 1
                a = FullyConnected("fc", x, 2)
        return a, FullyConnected("plain", x, 2)

    tower = Tower(body, [None, 4])
    tower.run(x)
    w, b = RNG.normal(size=(4, 2)).astype("float32"), RNG.normal(size=2).astype("float32")
    tower.set(fc__W=w, fc__b=b, plain__W=w, plain__b=b)
    a, plain = tower.run(x)
    np.testing.assert_allclose(a, x @ (2 * w + 1) + (2 * b + 1), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(plain, x @ w + b, **TOL)  # outside the block: the variables themselves
    np.testing.assert_allclose(tower.run(x, index=1)[0], a, **TOL)  # every tower and trace


def test_freeze_variables_stops_gradients_or_makes_variables_untrainable():
    def body(x):
        with freeze_variables(stop_gradient=True):
            x = FullyConnected("stopped", x, 3)
        with freeze_variables(stop_gradient=False, skip_collection=True):
            x = FullyConnected("frozen", x, 3)
        return tf.reduce_sum(FullyConnected("free", x, 1))

    func = TowerFunc(body, [tf.TensorSpec([None, 2], tf.float32, "x")])

    @tf.function
    def gradients(x):
        with tf.GradientTape() as tape:
            with TowerContext("tower0", is_training=True):
                loss = func(x)
        return tape.gradient(loss, func.variables)

    grads = gradients(tf.ones([2, 2]))
    names = [v.name.split(":")[0] for v in func.variables]
    assert [n for n, g in zip(names, grads) if g is not None] == ["free/W", "free/b"]
    assert [v.name.split(":")[0] for v in func.trainable_variables] == ["stopped/W", "stopped/b", "free/W", "free/b"]

