"""SingleCostTrainer(mixed_precision=True): float16 compute, float32 variables, dynamic loss scaling."""
from __future__ import annotations

import keras
import numpy as np
import pytest
from mixed_precision_cases import fp32_logits

from trainstack.inputs import FeedInput
from trainstack.towers import GlobalNormClip, SimpleTrainer, apply_grad_processors


@pytest.fixture
def mixed_float16():
    keras.config.set_dtype_policy("mixed_float16")
    try:
        yield
    finally:
        keras.config.set_dtype_policy("float32")


def test_trains_in_float16_with_float32_variables_like_float32(classifier, make_df, setup, mixed_float16):
    batches = make_df(6, seed=1)
    keras.utils.set_random_seed(3)
    model = fp32_logits(classifier)()
    trainer = setup(SimpleTrainer(mixed_precision=True), model, FeedInput(batches))
    assert isinstance(trainer.optimizer, keras.optimizers.LossScaleOptimizer)
    start = [w.numpy() for w in model.fc.weights]
    trainer.train([], [], steps_per_epoch=6, max_epoch=1)
    assert all(w.dtype == "float32" for w in model.fc.weights)
    assert trainer.get_predictor(["x"], ["fp16_logits"])(batches[0][0])[0].dtype == np.float16

    keras.config.set_dtype_policy("float32")
    reference = classifier()
    ref_trainer = setup(SimpleTrainer(), reference, FeedInput(batches))
    for w, v in zip(reference.fc.weights, start):
        w.assign(v)
    ref_trainer.train([], [], steps_per_epoch=6, max_epoch=1)
    assert max(np.abs(w.numpy() - v).max() for w, v in zip(model.fc.weights, start)) > 0.05  # it trained
    for a, b in zip(model.fc.weights, reference.fc.weights):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=2e-2, atol=2e-3)  # float16 rounding


def test_a_step_whose_gradients_overflow_is_skipped_and_the_scale_shrinks(classifier, make_df, setup,
                                                                         mixed_float16):
    x, label = make_df(1, seed=2)[0]
    huge = (x * 3e4).astype("float32")  # the scaled float16 gradients overflow
    model = fp32_logits(classifier)()
    trainer = setup(SimpleTrainer(mixed_precision=True), model, FeedInput([(huge, label), (x, label)]))
    before = [w.numpy() for w in model.fc.weights]
    scale = float(trainer.optimizer.dynamic_scale.numpy())
    trainer.train([], [], steps_per_epoch=1, max_epoch=1)
    for w, b in zip(model.fc.weights, before):
        np.testing.assert_array_equal(w.numpy(), b)  # skipped
    assert float(trainer.optimizer.dynamic_scale.numpy()) == scale / 2


def test_needs_a_float16_policy_and_no_gradient_processors(classifier, make_df, setup, mixed_float16):
    keras.config.set_dtype_policy("float32")
    with pytest.raises(ValueError, match="set_dtype_policy\\('mixed_float16'\\)"):
        setup(SimpleTrainer(mixed_precision=True), classifier(), FeedInput(make_df(2)))
    keras.config.set_dtype_policy("mixed_float16")
    with pytest.raises(ValueError, match="gradient processors"):
        setup(SimpleTrainer(mixed_precision=True), classifier(), FeedInput(make_df(2)),
              lambda: apply_grad_processors(keras.optimizers.SGD(0.1), [GlobalNormClip(1.0)]))


def test_multi_tower_trainers_take_it_in_their_constructor(cpus):
    import mixed_precision_cases  # noqa: PLC0415 - by its plain name: the device pool's worker imports it

    for name, (diff, moved) in cpus.run(mixed_precision_cases.multi_tower_trains_in_float16_like_float32).items():
        assert moved > 0.05, name  # it trained
        assert diff < 5e-3, (name, diff)  # float16 rounding
