"""Devices of the multi-GPU trainers, their arguments and errors.

The cases that need several devices run in a worker process with 4 logical
CPU devices (see multigpu_cases.py for why a worker).
"""
from __future__ import annotations

import multigpu_cases as cases
import pytest
import tensorflow as tf

from trainstack.inputs import QueueInput, StagingInput
from trainstack.towers import (
    AsyncMultiGPUTrainer,
    MultiGPUTrainerBase,
    SyncMultiGPUTrainerParameterServer,
    SyncMultiGPUTrainerReplicated,
    apply_default_prefetch,
    resolve_devices,
)

KIND = "GPU" if tf.config.get_visible_devices("GPU") else "CPU"


def test_gpus_as_a_count_indices_or_names():
    assert resolve_devices(2) == [f"/device:{KIND}:0", f"/device:{KIND}:1"]
    assert resolve_devices([0, 2]) == [f"/device:{KIND}:0", f"/device:{KIND}:2"]
    assert resolve_devices(["/gpu:1", "cpu:0", "/device:CPU:3"]) == \
        ["/device:GPU:1", "/device:CPU:0", "/device:CPU:3"]
    assert resolve_devices("/cpu:1") == ["/device:CPU:1"]
    assert resolve_devices([tf.config.LogicalDevice("/job:localhost/replica:0/task:0/device:CPU:2", "CPU")]) \
        == ["/job:localhost/replica:0/task:0/device:CPU:2"]


@pytest.mark.parametrize("gpus, error, match", [
    (0, ValueError, "at least 1"), (True, TypeError, "count"), ([], TypeError, "non-empty"),
    ([0, 0], ValueError, "more than once"), (["/cpu:1", "/device:CPU:1"], ValueError, "more than once"),
    ([-1], ValueError, "negative"), (["nonsense:x:y"], ValueError, "device name"), ([1.5], TypeError, "1.5"),
])
def test_bad_gpus_are_refused(gpus, error, match):
    with pytest.raises(error, match=match):
        SyncMultiGPUTrainerReplicated(gpus)


def test_trainer_options_are_checked():
    with pytest.raises(ValueError, match="mode"):
        SyncMultiGPUTrainerReplicated(2, mode="ring")
    with pytest.raises(ValueError, match="needs GPUs"):
        SyncMultiGPUTrainerReplicated(["/cpu:0", "/cpu:1"], mode="nccl")
    with pytest.raises(ValueError, match="ps_device"):
        SyncMultiGPUTrainerParameterServer(2, ps_device="tpu")
    with pytest.raises(TypeError, match="scale_gradient"):
        AsyncMultiGPUTrainer(2, scale_gradient="yes")
    with pytest.raises(TypeError, match="average"):
        SyncMultiGPUTrainerReplicated(2, average=None)
    with pytest.raises(TypeError, match="base class"):
        MultiGPUTrainerBase(2)
    # gpu_prefetch is a step option (the older form's argument too): no StagingInput with it off
    assert SyncMultiGPUTrainerReplicated(2, gpu_prefetch=False).gpu_prefetch is False
    with pytest.raises(TypeError, match=r"unknown step option\(s\) \['prefetch'\]"):
        SyncMultiGPUTrainerReplicated(2, prefetch=False)
    for cls in (SyncMultiGPUTrainerReplicated, SyncMultiGPUTrainerParameterServer, AsyncMultiGPUTrainer):
        with pytest.raises(ValueError, match="RuntimeConfig\\(xla=True\\)"):
            cls(2, xla_compile=True)
        assert cls(1, xla_compile=True).xla_compile  # one device: the step may be compiled


def test_defaults_follow_tensorpack():
    assert SyncMultiGPUTrainerReplicated(["/cpu:0", "/cpu:1"]).reduce_mode == "cpu"
    assert SyncMultiGPUTrainerReplicated(["/gpu:0", "/gpu:1"]).reduce_mode == "nccl"
    assert SyncMultiGPUTrainerReplicated(["/gpu:0", "/gpu:1"], mode="CPU").reduce_mode == "cpu"
    assert SyncMultiGPUTrainerParameterServer(2).ps_device == "gpu"
    assert SyncMultiGPUTrainerParameterServer(3).ps_device == "cpu"
    assert AsyncMultiGPUTrainer(3).ps_device == "gpu" and AsyncMultiGPUTrainer(4).ps_device == "cpu"
    trainer = SyncMultiGPUTrainerParameterServer([0, 1], ps_device="cpu")
    assert trainer.num_towers == 2 and trainer.devices == [f"/device:{KIND}:0", f"/device:{KIND}:1"]


def test_several_towers_prefetch_to_each_device():
    df = cases.make_batches(2)
    source = apply_default_prefetch(df, SyncMultiGPUTrainerReplicated(2))
    assert isinstance(source, StagingInput) and isinstance(source.input, QueueInput)
    assert isinstance(apply_default_prefetch(df, SyncMultiGPUTrainerReplicated(1)), QueueInput)


def test_missing_devices_are_named(cpus):
    cpus.run(cases.missing_device)


def test_logical_cpu_devices_helper(cpus):
    cpus.run(cases.logical_devices_helper)


def test_the_optimizer_must_come_from_get_opt_fn(cpus):
    cpus.run(cases.optimizer_outside_strategy)


@pytest.mark.parametrize("trainer", ["SyncMultiGPUTrainerReplicated", "SyncMultiGPUTrainerParameterServer",
                                     "AsyncMultiGPUTrainer"])
def test_launch_train_with_config(cpus, trainer):
    cpus.run(cases.launch, trainer)


@pytest.mark.parametrize("via_config", [True, False], ids=["launch_train_with_config", "train_with_defaults"])
def test_the_default_epoch_of_k_towers_is_announced_as_k_passes(cpus, via_config):
    # 6 batches, 2 towers: the default epoch is 6 steps of 2 batches, 2 passes over the data
    result = cpus.run(cases.default_epoch_warnings, None, via_config)
    assert result["steps"] == 6
    said = [w for w in result["warnings"] if "passes over the data" in w]
    assert said == ["SyncMultiGPUTrainerReplicated trains 2 towers, each on its own batch: the default "
                    "steps_per_epoch=6 (the input's size) makes an epoch 2 passes over the data. For one "
                    "pass per epoch, pass steps_per_epoch=3 (to TrainConfig or train_with_defaults)."]
    # given steps_per_epoch, nothing is said
    result = cpus.run(cases.default_epoch_warnings, 3, via_config)
    assert result["steps"] == 3
    assert not [w for w in result["warnings"] if "passes over the data" in w]


def test_least_loaded_placement_spreads_variables_by_load(cpus):
    cpus.run(cases.least_loaded_setter)
