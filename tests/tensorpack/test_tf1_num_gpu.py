"""``get_num_gpu`` counts as tensorpack's did: ``CUDA_VISIBLE_DEVICES`` first (issue 23, 7).

With the variable set, the count is the GPUs it lists, whatever TensorFlow sees
(a warning says when TensorFlow sees fewer); unset, the GPUs TensorFlow sees.
A trainer given more towers than there are devices fails at setup, naming them.
"""
from __future__ import annotations

import logging

import pytest
import tensorflow as tf

from trainstack.tensorpack.tf1 import SyncMultiGPUTrainerReplicated, get_num_gpu
from trainstack.towers import TrainConfig, launch_train_with_config

from .conftest import TinyClassifier, make_dataflow


@pytest.mark.parametrize("value, count", [
    ("0", 1), ("0,1,3", 3), ("2, 5", 2), ("0,1,", 2),  # entries listed, empty ones skipped
    ("", 0), ("-1", 0), ("1,-1,2", 1),                 # CUDA hides every GPU from a negative index on
])
def test_cuda_visible_devices_is_counted_first(monkeypatch, value, count):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", value)
    assert get_num_gpu() == count


def test_without_cuda_visible_devices_the_gpus_tensorflow_sees(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert get_num_gpu() == len(tf.config.list_physical_devices("GPU"))


def test_a_count_above_what_tensorflow_sees_warns(monkeypatch, caplog):
    seen = len(tf.config.list_physical_devices("GPU"))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", ",".join(str(k) for k in range(seen + 2)))
    with caplog.at_level(logging.WARNING, logger="trainstack.tensorpack"):
        assert get_num_gpu() == seen + 2
    assert f"lists {seen + 2} GPU(s), but TensorFlow sees {seen}" in caplog.text
    caplog.clear()
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", ",".join(str(k) for k in range(seen)))
    with caplog.at_level(logging.WARNING, logger="trainstack.tensorpack"):
        assert get_num_gpu() == seen
    assert "get_num_gpu" not in caplog.text


def test_more_towers_than_devices_fail_at_setup_naming_the_devices():
    kind = "GPU" if tf.config.get_visible_devices("GPU") else "CPU"
    towers = len(tf.config.list_logical_devices(kind)) + 1
    trainer = SyncMultiGPUTrainerReplicated(towers)
    assert trainer.devices == [f"/device:{kind}:{k}" for k in range(towers)]  # by index, no wrapping
    config = TrainConfig(model=TinyClassifier(), dataflow=make_dataflow(2), max_epoch=1, monitors=[],
                         callbacks=[])
    with pytest.raises(ValueError, match=rf"\['/device:{kind}:{towers - 1}'\] do not exist"):
        launch_train_with_config(config, trainer)
