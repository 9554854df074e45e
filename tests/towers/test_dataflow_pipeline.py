"""A tensorpack-style DataFlow pipeline (DataFromList -> MultiProcessMapData -> BatchData)
trained by SimpleTrainer through launch_train_with_config(TrainConfig(dataflow=...))."""
from __future__ import annotations

from collections import Counter

import dataflow_pipeline_maps
import numpy as np
import pytest
from id_model import BatchRecorder, IdClassifier

from trainstack.dataflow import BatchData, DataFromList, MultiProcessMapData
from trainstack.inputs import FeedInput
from trainstack.towers import SimpleTrainer, TrainConfig, launch_train_with_config

N, BATCH = 96, 16


@pytest.mark.parametrize("strict", [True, False])
def test_batch_of_multiprocess_map_trains_a_simple_trainer(strict):
    source = DataFromList([[np.int64(i)] for i in range(N)])  # shuffled each pass
    mapped = MultiProcessMapData(source, 2, dataflow_pipeline_maps.make_example, buffer_size=10, strict=strict)
    recorder = BatchRecorder()
    config = TrainConfig(dataflow=BatchData(mapped, BATCH), model=IdClassifier(), callbacks=[recorder],
                         max_epoch=3, extra_callbacks=[], monitors=[])
    trainer = SimpleTrainer()
    try:
        launch_train_with_config(config, trainer)
    finally:
        mapped.close()
    assert type(trainer.input) is FeedInput
    assert trainer.loop.steps_per_epoch == N // BATCH  # len(BatchData) = len(source) // BATCH
    assert (trainer.epoch_num, trainer.global_step) == (3, 3 * N // BATCH)
    assert sorted(recorder.ids) == [1, 2, 3]
    if strict:  # every epoch is one pass of the source, each example exactly once
        for epoch_ids in recorder.ids.values():
            assert sorted(epoch_ids) == list(range(N))
    else:  # an endless stream of passes: 3 epochs hold about 3 passes, buffer edges aside
        counts = Counter(i for epoch_ids in recorder.ids.values() for i in epoch_ids)
        assert sum(counts.values()) == 3 * N and set(counts) == set(range(N))
        assert 2 <= min(counts.values()) and max(counts.values()) <= 4
    # it learned: the blobs are 2 apart in each of 4 features; the last epoch's cost is ~0.16
    assert np.mean(recorder.costs[-6:]) < min(0.3, np.mean(recorder.costs[:6]))
    assert not any(p.is_alive() for p in mapped.workers)
