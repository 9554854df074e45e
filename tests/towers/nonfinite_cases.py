"""Helpers of test_skip_nonfinite.py, and its multi-tower case (run in the device pool's worker
process, which imports this module by its plain name)."""
from __future__ import annotations

import keras
import numpy as np

from trainstack.inputs import QueueInput
from trainstack.towers import SyncMultiGPUTrainerReplicated


def adam_classifier(classifier):
    """``classifier`` trained with Adam: its moments and step count would show any update made
    by a skipped step."""
    class Model(classifier):
        def optimizer(self):
            return keras.optimizers.Adam(0.05)
    return Model


def poisoned(batches, index):
    out = list(batches)
    x, label = out[index]
    out[index] = (np.full_like(x, np.nan), label)
    return out


def train(trainer, model, source, steps, setup):
    setup(trainer, model, source)
    trainer.train([], [], steps_per_epoch=steps, max_epoch=1)
    return [w.numpy() for w in model.fc.weights]


def every_tower_skips_together(devices):
    """(runs in a process with several CPU devices) 2 towers: step 2's first tower gets the NaN
    batch; the averaged gradients are NaN on both, so both skip; the max difference to a run
    without that step's batches."""
    from conftest import TinyClassifier, make_dataflow, setup_trainer  # noqa: PLC0415 - the worker's path

    batches = make_dataflow(6, seed=4)
    model_cls = adam_classifier(TinyClassifier)
    keras.utils.set_random_seed(0)
    without = train(SyncMultiGPUTrainerReplicated(devices[:2]), model_cls(),
                    QueueInput(batches[:2] + batches[4:]), 2, setup_trainer)
    keras.utils.set_random_seed(0)
    trainer = SyncMultiGPUTrainerReplicated(devices[:2], skip_nonfinite_steps=True)
    skipped = train(trainer, model_cls(), QueueInput(poisoned(batches, 2)), 3, setup_trainer)
    return max(float(np.abs(a - b).max()) for a, b in zip(skipped, without))
