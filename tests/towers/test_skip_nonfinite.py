"""skip_nonfinite_steps=True (issue 15): a step whose gradients hold a NaN changes nothing, is
logged with its global step and counted; the run goes on as if that batch had not been there."""
from __future__ import annotations

import logging

import keras
import numpy as np
import pytest
from nonfinite_cases import adam_classifier, poisoned, train

from trainstack.inputs import FeedInput
from trainstack.towers import SimpleTrainer


def test_a_nan_batch_is_skipped_as_if_it_was_not_there(classifier, make_df, setup, caplog):
    batches = make_df(5, seed=2)
    model_cls = adam_classifier(classifier)
    keras.utils.set_random_seed(0)
    without = train(SimpleTrainer(), model_cls(), FeedInput(batches[:2] + batches[3:]), 4, setup)
    keras.utils.set_random_seed(0)
    model = model_cls()
    trainer = SimpleTrainer(skip_nonfinite_steps=True)
    with caplog.at_level(logging.WARNING, logger="trainstack.towers"):
        skipped = train(trainer, model, FeedInput(poisoned(batches, 2)), 5, setup)
    for a, b in zip(skipped, without):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    assert int(trainer.optimizer.iterations.numpy()) == 4
    assert "global step 3: the loss 'cost' was not finite" in caplog.text
    assert trainer.monitors.get_latest("skipped_steps") == 1


def test_without_the_option_the_nan_reaches_the_weights(classifier, make_df, setup):
    weights = train(SimpleTrainer(), adam_classifier(classifier)(), FeedInput(poisoned(make_df(3), 1)), 3, setup)
    assert not np.isfinite(weights[0]).all()


def test_every_tower_skips_together(cpus):
    import nonfinite_cases  # noqa: PLC0415 - by its plain name: the device pool's worker imports it

    assert cpus.run(nonfinite_cases.every_tower_skips_together) < 1e-6


def test_the_option_is_a_bool(classifier):
    assert SimpleTrainer(skip_nonfinite_steps=True).skip_nonfinite_steps is True
    with pytest.raises(TypeError, match=r"SimpleTrainer\(skip_nonfinite_steps=\.\.\.\) must be True or False, got 1"):
        SimpleTrainer(skip_nonfinite_steps=1)
    with pytest.raises(TypeError, match=r"unknown step option\(s\) \['skip_nonfinite_step'\]; the step options "
                                        r"are \[.*'skip_nonfinite_steps'"):
        SimpleTrainer(skip_nonfinite_step=True)
