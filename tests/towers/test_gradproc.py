"""Gradient processors change gradients as promised, alone and inside a trainer."""
from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from trainstack.callbacks import SummaryCollection, summary_collection_scope
from trainstack.towers import (
    FilterNoneGrad,
    GlobalNormClip,
    MapGradient,
    ProcessedOptimizer,
    ScaleGradient,
    SimpleTrainer,
    SummaryGradient,
    apply_grad_processors,
)


@pytest.fixture
def pairs():
    w = tf.Variable(tf.zeros([2]), name="layer/kernel")
    b = tf.Variable(tf.zeros([]), name="layer/bias")
    other = tf.Variable(tf.zeros([2]), name="head/kernel")
    return [(tf.constant([3.0, 4.0]), w), (tf.constant(12.0), b), (tf.constant([0.0, 0.0]), other)]


def norms(grads_and_vars):
    return float(tf.linalg.global_norm([g for g, _ in grads_and_vars]).numpy())


def test_global_norm_clip(pairs):
    assert norms(pairs) == pytest.approx(13.0)
    clipped = GlobalNormClip(1.0).process(pairs)
    assert norms(clipped) == pytest.approx(1.0)
    np.testing.assert_allclose(clipped[0][0].numpy(), np.array([3.0, 4.0]) / 13.0, rtol=1e-6)
    assert [v for _, v in clipped] == [v for _, v in pairs]
    unchanged = GlobalNormClip(100.0).process(pairs)
    np.testing.assert_allclose(unchanged[1][0].numpy(), 12.0)
    with pytest.raises(ValueError, match="positive"):
        GlobalNormClip(0)


def test_scale_gradient_first_match_wins_and_others_are_unchanged(pairs):
    proc = ScaleGradient([("layer/kernel", 0.5), ("layer/.*", 10.0)], verbose=False)
    out = proc.process(pairs)
    np.testing.assert_allclose(out[0][0].numpy(), [1.5, 2.0])
    np.testing.assert_allclose(out[1][0].numpy(), 120.0)
    assert out[2][0] is pairs[2][0]
    single = ScaleGradient(("head/.*", 2.0)).process([(tf.constant([1.0, 1.0]), pairs[2][1])])
    np.testing.assert_allclose(single[0][0].numpy(), [2.0, 2.0])
    with pytest.raises(TypeError, match="pairs"):
        ScaleGradient([("x", "big")])


def test_scale_gradient_keeps_sparse_gradients_sparse():
    var = tf.Variable(tf.zeros([4, 2]), name="embedding")
    grad = tf.IndexedSlices(tf.ones([2, 2]), tf.constant([0, 3]), tf.constant([4, 2]))
    (out, _), = ScaleGradient([("embed.*", 3.0)], verbose=False).process([(grad, var)])
    assert isinstance(out, tf.IndexedSlices)
    np.testing.assert_allclose(out.values.numpy(), 3.0)
    np.testing.assert_array_equal(out.indices.numpy(), [0, 3])


def test_map_gradient_with_one_or_two_arguments(pairs):
    out = MapGradient(lambda g: -g, regex="layer/").process(pairs)
    np.testing.assert_allclose(out[0][0].numpy(), [-3.0, -4.0])
    np.testing.assert_allclose(out[2][0].numpy(), [0.0, 0.0])
    seen = []
    MapGradient(lambda g, v: seen.append(v.name) or g, regex="head").process(pairs)
    assert seen == ["head/kernel:0"]


def test_filter_none_grad(pairs):
    out = FilterNoneGrad(verbose=False).process([(None, pairs[0][1]), pairs[1]])
    assert [v for _, v in out] == [pairs[1][1]]
    with pytest.raises(TypeError, match="pairs"):
        FilterNoneGrad().process([pairs[0][0]])


def test_summary_gradient_records_in_the_current_collection(pairs):
    collection = SummaryCollection("test")

    @tf.function
    def step():
        with summary_collection_scope(collection):
            return SummaryGradient(regex="layer/kernel").process(pairs)

    out = step()
    np.testing.assert_allclose(out[0][0].numpy(), [3.0, 4.0])  # gradients pass through unchanged
    assert collection.moving_average_values()["grad_global_norm"] == pytest.approx(13.0)
    values = {name: value for name, _, value in collection.summary_values()}
    assert values["layer/kernel-grad-rms"] == pytest.approx(np.sqrt(12.5))
    assert "layer/kernel-grad-histogram" in values
    assert not any(n.startswith("layer/bias") for n in values)


def test_apply_grad_processors_wraps_and_delegates(pairs):
    opt = keras.optimizers.SGD(0.1)
    wrapped = apply_grad_processors(opt, [ScaleGradient(("layer/kernel", 0.0), verbose=False)])
    assert isinstance(wrapped, ProcessedOptimizer)
    assert wrapped.learning_rate is opt.learning_rate
    twice = apply_grad_processors(wrapped, [GlobalNormClip(1.0)])
    assert twice.optimizer is opt
    assert [type(p).__name__ for p in twice.processors] == ["GlobalNormClip", "ScaleGradient"]
    # usable outside trainers: the processed gradients are applied
    w, b = pairs[0][1], pairs[1][1]
    wrapped.apply_gradients([pairs[0], pairs[1]])
    np.testing.assert_array_equal(w.numpy(), [0.0, 0.0])  # its gradient was scaled by 0
    assert float(b.numpy()) == pytest.approx(-1.2)
    # TF1's optimizers: the core refuses them, naming the Keras optimizer and the tensorpack layer
    # (whose apply_grad_processors takes them: tests/tensorpack/test_tf1_gradproc.py)
    with pytest.raises(TypeError, match=r"GradientDescentOptimizer.*keras\.optimizers\.SGD.*trainstack\.tensorpack"):
        apply_grad_processors(tf.compat.v1.train.GradientDescentOptimizer(0.1), [])
    with pytest.raises(TypeError, match=r"FtrlOptimizer.*keras\.optimizers\.Ftrl.*trainstack\.tensorpack"):
        apply_grad_processors(tf.compat.v1.train.FtrlOptimizer(0.1), [])
    with pytest.raises(TypeError, match="GradientProcessor"):
        apply_grad_processors(opt, [lambda g: g])


def test_processors_run_in_the_trainers_step(classifier, dataflow, setup):
    lr, clip = 0.5, 1e-3
    model = classifier(learning_rate=lr)
    opt = apply_grad_processors(model.get_optimizer(), [GlobalNormClip(clip)])
    trainer = setup(SimpleTrainer(), model, dataflow, opt_fn=lambda: opt)
    assert trainer.optimizer is opt.optimizer
    before = [v.numpy().copy() for v in trainer.trainable_variables]
    trainer.train([], [], steps_per_epoch=1, max_epoch=1)
    change = np.sqrt(sum(np.sum((v.numpy() - b) ** 2) for v, b in zip(trainer.trainable_variables, before)))
    assert 0 < change <= lr * clip * 1.0001  # SGD moved by at most lr x the clipped norm

    frozen = classifier(learning_rate=lr)
    opt = apply_grad_processors(frozen.get_optimizer(), [ScaleGradient([(".*kernel", 0.0)], verbose=False)])
    trainer = setup(SimpleTrainer(), frozen, dataflow, opt_fn=lambda: opt)
    kernel, bias = frozen.fc.kernel.numpy().copy(), frozen.fc.bias.numpy().copy()
    trainer.train([], [], steps_per_epoch=2, max_epoch=1)
    np.testing.assert_array_equal(kernel, frozen.fc.kernel.numpy())
    assert not np.allclose(bias, frozen.fc.bias.numpy())
