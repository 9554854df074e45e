"""Checkpoints of the multi-GPU trainers restore into SimpleTrainer and the predictors, and back.

A checkpoint holds one value per variable whatever the trainer (object-based
``tf.train.Checkpoint``s are strategy-agnostic): ModelSaver's checkpoint of a
multi-GPU trainer restores into SimpleTrainer and an OfflinePredictor with the
same predictions; SimpleTrainer's restores into the multi-GPU trainer, into every
copy of a replicated variable and optimizer slot. Runs on logical CPU devices.
"""
from __future__ import annotations

import multigpu_cases as cases
import pytest


@pytest.mark.parametrize("trainer", ["SyncMultiGPUTrainerReplicated", "SyncMultiGPUTrainerParameterServer",
                                     "AsyncMultiGPUTrainer"])
def test_checkpoints_go_both_ways(cpus, trainer, tmp_path):
    cpus.run(cases.checkpoints, trainer, str(tmp_path))
