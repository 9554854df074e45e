"""The TF1 room's TF-slim: ``slim.arg_scope``, ``slim.batch_norm``, ``slim.nets.resnet_v1`` (the variable names
of TF-slim's ``resnet_v1_50.ckpt``, the logits of a plain TF2 ResNet-50 from the same arrays), and the guided
ReLU of ``Saliency/saliency-maps.py`` (``tf.RegisterGradient`` + ``gradient_override_map`` + ``tf.gradients`` in
``build_graph``), measured against guided backpropagation's formula."""
from __future__ import annotations

import numpy as np
import pytest
import slim_resnet_reference as ref  # by name (this folder is on sys.path, see conftest.py)
import tensorflow as tf

from trainstack.tensorpack.tf1 import TF1CallError, TowerContext, TowerFunc, tfv1
from trainstack.tensorpack.tf1.contrib import slim
from trainstack.tensorpack.tf1.slim_nets import resnet_v1


def build(fn, specs, is_training):
    """``fn`` traced as a tower (variables created by the room), and the tower function."""
    func = TowerFunc(fn, specs)

    @tf.function
    def run(*xs):
        with TowerContext("tower0" if is_training else "", is_training=is_training):
            return func(*xs)

    return func, run


def test_arg_scope_gives_defaults_that_nest_and_that_a_calls_arguments_override():
    @slim.add_arg_scope
    def f(x, a=1, b=2, c=3):
        return (x, a, b, c)

    assert slim.has_arg_scope(f) and slim.arg_scoped_arguments(f) == ["x", "a", "b", "c"]
    with slim.arg_scope([f], a=10, b=20):
        assert f(0) == (0, 10, 20, 3)
        with slim.arg_scope([f], b=200, c=300) as inner:
            assert f(0) == (0, 10, 200, 300)
            assert f(0, c=-1) == (0, 10, 200, -1)          # the call's keyword wins
        assert f(0) == (0, 10, 20, 3)                       # the inner scope ended
    assert f(0) == (0, 1, 2, 3)
    with slim.arg_scope(inner):                              # a scope re-entered as a dict
        assert f(0) == (0, 10, 200, 300)
    with pytest.raises(ValueError, match="not decorated with @add_arg_scope"):
        with slim.arg_scope([lambda x: x], a=1):
            pass
    with pytest.raises(ValueError, match="kwargs must be empty"):
        with slim.arg_scope(inner, a=1):
            pass
    # resnet_arg_scope(): conv2d normalized by batch_norm with slim's ResNet defaults, max_pool2d 'SAME'
    scope = resnet_v1.resnet_arg_scope()
    conv = next(v for k, v in scope.items() if k[1] == "conv2d")
    norm = next(v for k, v in scope.items() if k[1] == "batch_norm")
    assert conv["normalizer_fn"] is slim.batch_norm and conv["activation_fn"] is tf.nn.relu
    assert norm == {"decay": 0.997, "epsilon": 1e-5, "scale": True, "updates_collections": "update_ops"}
    assert next(v for k, v in scope.items() if k[1] == "max_pool2d") == {"padding": "SAME"}


def test_batch_norm_infers_on_its_moving_averages_and_trains_on_the_batch_updating_them():
    rng = np.random.default_rng(0)
    x = rng.normal(2.0, 3.0, (4, 3, 3, 2)).astype("float32")
    spec = [tf.TensorSpec(x.shape, tf.float32, "x")]

    def tower(x):
        with slim.arg_scope([slim.batch_norm], decay=0.9, epsilon=1e-3, scale=True):
            return slim.batch_norm(x, is_training=tower.training)

    for training in (False, True):
        tower.training = training
        func, run = build(tower, spec, training)
        run(tf.constant(x))
        v = {w.name.split(":")[0]: w for w in func.variables}
        assert sorted(v) == ["BatchNorm/beta", "BatchNorm/gamma", "BatchNorm/moving_mean", "BatchNorm/moving_variance"]
        values = {"beta": [0.5, -1.0], "gamma": [2.0, 0.5], "moving_mean": [1.0, 2.0], "moving_variance": [4.0, 9.0]}
        for name, value in values.items():
            v[f"BatchNorm/{name}"].assign(value)
        out = run(tf.constant(x)).numpy()
        if not training:
            expected = (x - values["moving_mean"]) / np.sqrt(np.add(values["moving_variance"], 1e-3)) \
                * values["gamma"] + values["beta"]
            np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
            np.testing.assert_array_equal(v["BatchNorm/moving_mean"].numpy(), values["moving_mean"])
        else:
            mean, var = x.mean(axis=(0, 1, 2)), x.var(axis=(0, 1, 2))
            expected = (x - mean) / np.sqrt(var + 1e-3) * values["gamma"] + values["beta"]
            np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)
            n = x.size // 2   # the fused kernel averages the unbiased variance, as TF1's
            np.testing.assert_allclose(v["BatchNorm/moving_mean"].numpy(),
                                       0.9 * np.array(values["moving_mean"]) + 0.1 * mean, rtol=1e-5)
            np.testing.assert_allclose(v["BatchNorm/moving_variance"].numpy(),
                                       0.9 * np.array(values["moving_variance"]) + 0.1 * var * n / (n - 1), rtol=1e-5)
    with pytest.raises(TF1CallError, match="renorm"):
        slim.batch_norm(tf.zeros([1, 2]), renorm=True)


def test_resnet_v1_50_has_slims_variable_names_and_the_reference_networks_logits():
    weights = ref.random_weights(seed=1)
    x = np.random.default_rng(2).uniform(-60, 60, (2, 64, 64, 3)).astype("float32")
    seen = {}

    def tower(images):
        with slim.arg_scope(resnet_v1.resnet_arg_scope()):
            logits, end_points = resnet_v1.resnet_v1_50(images, 1000, is_training=False)
        seen["end_points"] = list(end_points)
        seen["losses"] = len(tfv1.get_collection(tfv1.GraphKeys.REGULARIZATION_LOSSES))
        return logits

    func, run = build(tower, [tf.TensorSpec(x.shape, tf.float32, "image")], False)
    run(tf.constant(x))
    variables = {w.name.split(":")[0]: w for w in func.variables}
    assert sorted(variables) == sorted(weights)    # exactly the names of TF-slim's resnet_v1_50.ckpt
    assert len(variables) == 53 * 5 + 2            # 53 convolutions with batch norm, the logits' two
    for name, value in weights.items():
        variables[name].assign(value)
    logits = run(tf.constant(x)).numpy()
    assert logits.shape == (2, 1, 1, 1000)         # contrib's logits are not squeezed
    expected = ref.logits(weights, tf.constant(x)).numpy()
    assert np.abs(expected).max() > 1.0
    print(f"resnet_v1_50 logits: max |room - reference| = {np.abs(logits - expected).max():.2e}, "
          f"max |reference| = {np.abs(expected).max():.2f}")
    np.testing.assert_allclose(logits, expected, rtol=1e-3, atol=1e-3 * np.abs(expected).max())
    ends = seen["end_points"]
    assert ends[:5] == ["resnet_v1_50/conv1", "resnet_v1_50/block1/unit_1/bottleneck_v1/shortcut",
                        "resnet_v1_50/block1/unit_1/bottleneck_v1/conv1",
                        "resnet_v1_50/block1/unit_1/bottleneck_v1/conv2",
                        "resnet_v1_50/block1/unit_1/bottleneck_v1/conv3"]
    assert ends[-2:] == ["resnet_v1_50/logits", "predictions"]
    assert {"resnet_v1_50/block1", "resnet_v1_50/block4", "resnet_v1_50/block4/unit_3/bottleneck_v1"} <= set(ends)
    assert seen["losses"] == 53 + 1                 # resnet_arg_scope's L2 on every convolution's weights


def test_other_nets_are_refused_by_name():
    with pytest.raises(TF1CallError, match="resnet_v1.resnet_v1_200: not provided"):
        resnet_v1.resnet_v1_200
    with pytest.raises(TF1CallError, match="tf.contrib.slim.nets.vgg: not provided"):
        slim.nets.vgg
    assert slim.nets.resnet_v1 is resnet_v1 and callable(resnet_v1.resnet_v1_101) and callable(resnet_v1.resnet_v1_152)


def test_the_scripts_guided_relu_is_guided_backprop_in_a_tower_traced_twice():
    """saliency-maps.py's guided_relu() and saliency_map() in build_graph, as written: the predictor traces
    build_graph twice (variables, then the predictor), so @tf.RegisterGradient runs twice; the gradient is
    guided backpropagation's (TF1's relu gradient where the incoming gradient is positive, else 0)."""
    from tensorflow.python.ops import gen_nn_ops

    import trainstack.tensorpack as tp

    w1 = np.array([[1.0, -2.0, 0.5], [-1.0, 1.0, 2.0]], "float32")
    w2 = np.array([[1.0, -1.0], [-3.0, 2.0], [2.0, 1.0]], "float32")
    traces = []

    class Model(tp.ModelDescBase):
        def inputs(self):
            return [tf.TensorSpec((2,), tf.float32, "x")]

        def build_graph(self, x):
            traces.append(1)

            @tfv1.RegisterGradient("GuidedReLUTest")
            def grad(op, g):
                return tfv1.where(0. < g, gen_nn_ops.relu_grad(g, op.outputs[0]), tfv1.zeros(g.get_shape()))

            a = tfv1.get_variable("w1", initializer=tf.constant(w1))
            b = tfv1.get_variable("w2", initializer=tf.constant(w2))
            with tfv1.get_default_graph().gradient_override_map({"Relu": "GuidedReLUTest"}):
                h = tfv1.nn.relu(tfv1.matmul(x[None], a))
                out = tfv1.matmul(h, b)
                tfv1.identity(tfv1.gradients(tfv1.reduce_max(out, 1), x)[0], name="saliency")

    predictor = tp.OfflinePredictor(tp.PredictConfig(model=Model(), input_names=["x"], output_names=["saliency"]))
    for x in ([1.0, 0.5], [-1.0, 2.0], [2.0, 1.0]):
        x = np.array(x, "float32")
        pre = x @ w1
        top = int(np.argmax(np.maximum(pre, 0) @ w2))
        upstream = w2[:, top]
        guided = np.where((upstream > 0) & (pre > 0), upstream, 0.0)
        plain = np.where(pre > 0, upstream, 0.0)
        got = predictor(x)[0]
        np.testing.assert_allclose(got, w1 @ guided, rtol=1e-6)
        if not np.allclose(guided, plain):
            assert not np.allclose(got, w1 @ plain)   # the registered gradient applied, not TensorFlow's
    assert len(traces) >= 2
