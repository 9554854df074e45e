"""tensorpack 0.11's ``graph_builder.utils.allreduce_grads`` (against its formula: the sum, or the mean, over the
towers of each variable's gradient, on each tower's device) and ``input_source.remap_input_source`` (the wrapped
source's tensors reach the model's inputs of those names; the model's other inputs are the step's feeds) and
``models.rename_tflayer_get_variable`` (tf.layers' variable names become tensorpack's)."""
from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from trainstack.loop import Callback, RunArgs
from trainstack.tensorpack import (
    BatchData,
    DataFromList,
    FeedInput,
    ModelDesc,
    ProcessTensors,
    QueueInput,
    SimpleTrainer,
    TrainConfig,
    launch_train_with_config,
)
from trainstack.tensorpack.graph_builder import allreduce_grads
from trainstack.tensorpack.input_source import remap_input_source
from trainstack.tensorpack.models import rename_tflayer_get_variable
from trainstack.tensorpack.tf1 import TowerContext, TowerFunc, tfv1

GRADS = [[np.arange(6.0).reshape(2, 3) + 10 * k, np.array([1.0, -2.0]) * (k + 1)] for k in range(3)]  # K=3, N=2


@pytest.mark.parametrize("average", [False, True])
@pytest.mark.parametrize("mode", ["nccl", "collective"])
def test_allreduce_grads_is_the_sum_or_mean_over_towers_on_each_device(average, mode):
    with tf.device("/cpu:0"):
        towers = [[tf.constant(g) for g in grads] for grads in GRADS]
    out = allreduce_grads(towers, average, mode=mode)
    assert len(out) == 3 and all(len(t) == 2 for t in out)
    for n in range(2):
        want = sum(GRADS[k][n] for k in range(3)) / (3 if average else 1)
        for k in range(3):
            np.testing.assert_allclose(out[k][n].numpy(), want)
            assert "CPU:0" in out[k][n].device


def test_allreduce_grads_in_a_traced_function_and_for_one_tower():
    @tf.function
    def reduce(a, b):
        return allreduce_grads([[a], [b]], average=True)

    out = reduce(tf.constant([1.0, 3.0]), tf.constant([3.0, 5.0]))
    np.testing.assert_allclose([t[0].numpy() for t in out], [[2.0, 4.0], [2.0, 4.0]])
    one = [[tf.constant(1.0)]]
    assert allreduce_grads(one, average=True) is one
    with pytest.raises(ValueError, match="'nccl' or 'collective'"):
        allreduce_grads(one, average=True, mode="ring")
    with pytest.raises(ValueError, match="same number of gradients"):
        allreduce_grads([[tf.constant(1.0)], []], average=False)


class ThreeInputs(ModelDesc):
    """Inputs ``scale, x, y``; the dataflow gives ``x, y`` only."""

    def inputs(self):
        return [tf.TensorSpec([None], tf.float32, "scale"), tf.TensorSpec([None, 2], tf.float32, "x"),
                tf.TensorSpec([None], tf.float32, "y")]

    def build_graph(self, scale, x, y):
        w = tf.compat.v1.get_variable("w", [2], initializer=tf.compat.v1.zeros_initializer())
        tf.identity(x, name="seen_x")
        tf.identity(y, name="seen_y")
        tf.identity(scale, name="seen_scale")
        return tf.reduce_mean(scale * tf.square(tf.reduce_sum(x * w, axis=1) - y), name="cost")

    def optimizer(self):
        return tf.compat.v1.train.GradientDescentOptimizer(0.1)


class FeedScale(Callback):
    """Feeds the model's ``scale`` input (not in the dataflow) with ``k + 1`` in step ``k``."""

    def _before_run(self, ctx):
        return RunArgs(feeds={"tower0/scale": np.full([4], self.global_step + 1.0, np.float32)})


def points():
    rng = np.random.RandomState(0)
    return [[rng.rand(2).astype(np.float32), np.float32(rng.rand())] for _ in range(8)]


@pytest.mark.parametrize("source", [FeedInput, QueueInput])
def test_remapped_tensors_reach_the_inputs_of_their_names_and_the_others_are_feeds(source):
    data = points()
    seen = []
    remapped = remap_input_source(source(BatchData(DataFromList(data, shuffle=False), 4)), ["x", "y"])
    trainer = SimpleTrainer()
    launch_train_with_config(TrainConfig(
        model=ThreeInputs(), data=remapped, max_epoch=1, steps_per_epoch=2, monitors=[],
        callbacks=[FeedScale(), ProcessTensors(["seen_x", "seen_y", "seen_scale"],
                                               lambda *v: seen.append([np.array(a) for a in v]))]), trainer)
    assert len(seen) == 2 and remapped.size() == 2
    for k, (x, y, scale) in enumerate(seen):
        np.testing.assert_array_equal(x, np.stack([p[0] for p in data[4 * k:4 * k + 4]]))
        np.testing.assert_array_equal(y, np.array([p[1] for p in data[4 * k:4 * k + 4]]))
        np.testing.assert_array_equal(scale, np.full([4], k + 1.0))
    assert not np.allclose(trainer.tower_func.variables[0].numpy(), 0)  # trained on the remapped inputs


def test_an_unfed_input_is_named_and_unknown_names_refused():
    remapped = remap_input_source(FeedInput(BatchData(DataFromList(points(), shuffle=False), 4)), ["x", "y"])
    with pytest.raises(KeyError, match=r"tower0/scale"):
        launch_train_with_config(TrainConfig(model=ThreeInputs(), data=remapped, max_epoch=1, steps_per_epoch=1,
                                             monitors=[]), SimpleTrainer())
    with pytest.raises(Exception, match=r"no inputs \['z'\]"):
        remap_input_source(FeedInput(DataFromList(points())), ["x", "z"]).setup(ThreeInputs().inputs())
    with pytest.raises(TypeError, match="must be an InputSource"):
        remap_input_source([1, 2], ["x"])


def test_rename_tflayer_get_variable_gives_tf_layers_variables_tensorpacks_names():
    def body(x):
        with rename_tflayer_get_variable():
            y = tfv1.layers.conv2d(x, 4, 3, name="conv0")
            with tfv1.variable_scope("bn"):
                mean = tfv1.get_variable("moving_mean", [4], initializer=tfv1.zeros_initializer())
                var = tfv1.get_variable("moving_variance", [4], initializer=tfv1.ones_initializer())
            y = (y - mean) / tf.sqrt(var)
        return tfv1.layers.dense(tfv1.layers.flatten(y), 2, name="fc")  # outside: tf.layers' own names

    func = TowerFunc(body, [tf.TensorSpec([None, 6, 6, 3], tf.float32, "x")])

    @tf.function
    def run(x):
        with TowerContext("tower0", is_training=True):
            return func(x)

    x = np.random.RandomState(1).rand(2, 6, 6, 3).astype(np.float32)
    out = run(tf.constant(x))
    variables = {v.name.split(":")[0]: v for v in func.variables}
    assert sorted(variables) == ["bn/mean/EMA", "bn/variance/EMA", "conv0/W", "conv0/b", "fc/bias", "fc/kernel"]
    conv = tf.nn.conv2d(x, variables["conv0/W"], 1, "VALID") + variables["conv0/b"]  # the renamed weights are used
    want = tf.reshape(conv, [2, -1]) @ variables["fc/kernel"] + variables["fc/bias"]
    np.testing.assert_allclose(out.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)


def tensorpacks_shape_utils():
    """tensorpack 0.11's ``models/shape_utils.py`` (it imports TensorFlow alone), loaded from its file: the
    ``tensorpack.models`` package itself needs TensorFlow 1."""
    import importlib.util
    import os

    spec = importlib.util.find_spec("tensorpack")
    if spec is None:
        pytest.skip("tensorpack 0.11 is not installed")
    path = os.path.join(spec.submodule_search_locations[0], "models", "shape_utils.py")
    module_spec = importlib.util.spec_from_file_location("tensorpack_shape_utils", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


def traced_shape(mod):
    """A tf.function applying two axis functions to a [None, 3, None, 10] input's shape with ``mod``'s
    StaticDynamicShape, and the static shapes its trace saw."""
    traced_static = []

    @tf.function(input_signature=[tf.TensorSpec([None, 3, None, 10], tf.float32)])
    def dynamic(x):
        shape = mod.StaticDynamicShape(x)
        shape.apply(1, lambda d: d * 3)
        shape.apply(2, lambda d: d + 5)
        traced_static.append(list(shape.get_static()))
        return tf.stack(shape.get_dynamic())

    return traced_static, dynamic


def test_shape_utils_keep_static_and_dynamic_shapes_as_tensorpacks():
    from trainstack.tensorpack.models import shape_utils

    theirs = tensorpacks_shape_utils()
    results = {}
    for name, mod in (("ours", shape_utils), ("theirs", theirs)):
        traced_static, dynamic = traced_shape(mod)
        computed = dynamic(tf.zeros([2, 3, 7, 10])).numpy().tolist()
        shape = mod.StaticDynamicShape(tf.zeros([2, 3, 4, 10]))
        shape.apply(0, lambda d: d + 1)
        static = shape.get_static(), shape.get_dynamic()
        axis = mod.StaticDynamicAxis(4, None).apply(lambda d: d * 2)
        unknown = mod.StaticDynamicAxis(None, 3).apply(lambda d: d * 2)  # None * 2: a TypeError, so dynamic
        results[name] = (traced_static, computed, static, (axis.static, axis.dynamic),
                         (unknown.static, unknown.dynamic),
                         str(mod.StaticDynamicAxis(1, 2)), mod.StaticLazyAxis(5)(), mod.DynamicLazyAxis([7, 8], 1)())
    assert results["ours"] == results["theirs"]
    assert results["ours"][0] == [[None, 9, None, 10]] and results["ours"][1] == [2, 9, 12, 10]
    assert results["ours"][4] == (None, 6)
    assert results["ours"][2] == ([3, 3, 4, 10], [3, 3, 4, 10])


def test_dependency_of_targets_and_fetches_answer_as_tensorpacks():
    tp_dependency = pytest.importorskip("tensorpack.tfutils.dependency")
    from trainstack.tensorpack.tfutils import dependency

    graph = tf.Graph()
    with graph.as_default():
        a = tf.random.normal([3], name="a")
        b = tf.random.normal([3], name="b")
        c = tf.multiply(a, 2.0, name="c")
        with tf.control_dependencies([b]):
            d = tf.identity(a, name="d")  # depends on b through a control input only
        cases = [
            ((c,), a), ((c,), b), ((d,), b), ((c.op,), a.op), ((c, d), b),
        ]
        fetch_cases = [(c, a), ([b], a), ({"x": c, "y": [b]}, b), ("c:0", a), (["d"], b), (d, c)]
        for targets, op in cases:
            assert dependency.dependency_of_targets(targets, op) == tp_dependency.dependency_of_targets(targets, op)
        for fetches, op in fetch_cases:
            assert dependency.dependency_of_fetches(fetches, op) == tp_dependency.dependency_of_fetches(fetches, op)
        answers = [dependency.dependency_of_targets(t, o) for t, o in cases]
        answers += [dependency.dependency_of_fetches(f, o) for f, o in fetch_cases]
        mixed = dependency.dependency_of_fetches((c, b.op), a)  # tensorpack's TF walk refused tensors with ops
    assert answers == [True, False, True, True, True, True, False, True, True, True, False] and mixed

    @tf.function
    def traced(x):
        y = x * 3
        z = x + 1
        return dependency.dependency_of_targets((y,), x), dependency.dependency_of_targets((y,), z)

    assert traced(tf.constant(1.0)) == (True, False)
    with pytest.raises(TypeError, match="tf.Operation or a graph tf.Tensor"):
        dependency.dependency_of_targets((c,), "a")
