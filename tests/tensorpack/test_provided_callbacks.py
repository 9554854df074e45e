"""tensorpack 0.11's ``DumpTensorAsImage``/``DumpParamAsImage``, ``HostMemoryTracker``, ``GPUMemoryTracker`` and
``CometMLMonitor`` in training, measured against tensorpack's documented behaviour: the images written and put,
the scalars put, what the comet_ml experiment (a fake module, for the test only) was told."""
from __future__ import annotations

import sys
import types

import numpy as np
import pytest
import tensorflow as tf
import tf1_layer_cases as cases

from trainstack.loop import MonitorBase
from trainstack.tensorpack.callbacks import (
    CometMLMonitor,
    DumpParamAsImage,
    DumpTensorAsImage,
    GPUMemoryTracker,
    HostMemoryTracker,
    ProcessTensors,
)
from trainstack.towers import TrainConfig, launch_train_with_config

cv2 = pytest.importorskip("cv2")


class Recorder(MonitorBase):
    """Every scalar and image put, with the global step."""

    def __init__(self):
        self.scalars, self.images = [], []

    def process_scalar(self, name, value):
        self.scalars.append((name, value, self.global_step))

    def process_image(self, name, value):
        self.images.append((name, np.array(value), self.global_step))


def train(callbacks, monitors=(), epochs=2):
    """MnistLike (tensorpack's mnist-convnet model code, shrunk) for ``epochs`` epochs of 2 steps."""
    trainer = cases.SimpleTrainer()
    launch_train_with_config(TrainConfig(model=cases.MnistLike(), dataflow=cases.batches(2), max_epoch=epochs,
                                         steps_per_epoch=2, callbacks=list(callbacks), monitors=list(monitors)),
                             trainer)
    return trainer


def variables(trainer):
    return {v.name.split(":")[0]: cases.value(v) for v in trainer.tower_func.variables}


def test_dump_param_as_image_writes_and_puts_a_variable_by_its_tf1_name(logger_dir):
    recorder = Recorder()
    dump = DumpParamAsImage("conv0/W:0", prefix="w0", map_func=lambda w: w.transpose(3, 0, 1, 2), scale=100)
    bias = DumpParamAsImage("fc1/b", map_func=lambda b: b[None, :])  # prefix: the name, a file in fc1/
    trainer = train([dump, bias], [recorder])
    weights = variables(trainer)["conv0/W"].transpose(3, 0, 1, 2)  # 8 filters, 3x3x1
    for k in range(8):  # tensorpack's file names: no suffix for the first image
        name = f"w0-ep002{'-' + str(k) if k else ''}.png"
        written = cv2.imread(f"{logger_dir}/{name}", cv2.IMREAD_UNCHANGED)
        np.testing.assert_array_equal(written, np.clip(weights[k][:, :, 0] * 100, 0, 255).astype("uint8"))
    assert sorted(p for p in __import__("os").listdir(logger_dir) if p.startswith("w0-ep001")) == sorted(
        f"w0-ep001{'-' + str(k) if k else ''}.png" for k in range(8))
    written = cv2.imread(f"{logger_dir}/fc1/b-ep002.png", cv2.IMREAD_UNCHANGED)
    np.testing.assert_array_equal(written, np.clip(variables(trainer)["fc1/b"][None, :] * 255, 0, 255).astype("uint8"))
    puts = [(name, step) for name, _, step in recorder.images]
    assert puts == [("w0", 2), ("fc1/b", 2), ("w0", 4), ("fc1/b", 4)]
    np.testing.assert_allclose(recorder.images[-2][1], weights, rtol=1e-6)  # put unscaled, as tensorpack


def test_dump_tensor_as_image_dumps_a_named_tensor_of_the_last_step(logger_dir):
    seen = []
    recorder = Recorder()
    trainer = train([ProcessTensors(["logits"], lambda x: seen.append(np.array(x))),
                     DumpTensorAsImage("logits", scale=20)], [recorder])
    assert len(seen) == 4 and trainer.global_step == 4
    written = cv2.imread(f"{logger_dir}/logits-ep002.png", cv2.IMREAD_UNCHANGED)
    np.testing.assert_array_equal(written, np.clip(seen[-1] * 20, 0, 255).astype("uint8"))
    np.testing.assert_allclose(recorder.images[-1][1], seen[-1], rtol=1e-6)
    earlier = cv2.imread(f"{logger_dir}/logits-ep001.png", cv2.IMREAD_UNCHANGED)
    np.testing.assert_array_equal(earlier, np.clip(seen[1] * 20, 0, 255).astype("uint8"))


def test_dump_tensor_as_image_needs_a_logger_dir():
    from trainstack.callbacks import get_logger_dir

    assert get_logger_dir() is None
    with pytest.raises(RuntimeError, match="set_logger_dir"):
        train([DumpTensorAsImage("logits")], epochs=1)


def test_host_memory_tracker_puts_psutils_available_memory_at_each_trigger(monkeypatch):
    psutil = pytest.importorskip("psutil")
    available = iter([5 * 1024 ** 3, 4 * 1024 ** 3, 3 * 1024 ** 3, 2.5 * 1024 ** 3])
    monkeypatch.setattr(psutil, "virtual_memory", lambda: types.SimpleNamespace(available=next(available)))
    recorder = Recorder()
    train([HostMemoryTracker()], [recorder])
    # logged at setup_graph (5 GB) and before_train (4 GB), put at each epoch's trigger
    assert [(v, s) for n, v, s in recorder.scalars if n == "HostFreeMemory (GB)"] == [(3.0, 2), (2.5, 4)]


def test_gpu_memory_tracker_names_tensorpacks_devices_and_refuses_bad_ones():
    assert GPUMemoryTracker()._devices == ["/gpu:0"] and GPUMemoryTracker([1, "/gpu:2"])._tf_devices == [
        "GPU:1", "GPU:2"]
    with pytest.raises(TypeError, match="list or tuple"):
        GPUMemoryTracker(0)
    with pytest.raises(ValueError, match="is not a GPU"):
        GPUMemoryTracker(["/cpu:0"])


@pytest.mark.skipif(bool(tf.config.list_physical_devices("GPU")), reason="the no-GPU case")
def test_gpu_memory_tracker_without_a_gpu_warns_and_puts_nothing(caplog):
    recorder = Recorder()
    with caplog.at_level("WARNING"):
        train([GPUMemoryTracker()], [recorder], epochs=1)
    assert "GPUMemoryTracker only supports GPU!" in caplog.text
    assert not [n for n, _, _ in recorder.scalars if n.startswith("PeakMemory")]


@pytest.mark.skipif(not tf.config.list_physical_devices("GPU"), reason="needs a GPU: reads its allocator's peak")
def test_gpu_memory_tracker_puts_the_gpus_peak_memory_after_each_epoch():
    recorder = Recorder()
    train([GPUMemoryTracker()], [recorder])
    puts = [(v, s) for n, v, s in recorder.scalars if n == "PeakMemory(MB)/gpu:0"]
    assert [s for _, s in puts] == [2, 4] and all(v > 0 for v, _ in puts)
    assert puts[1][0] == pytest.approx(tf.config.experimental.get_memory_info("GPU:0")["peak"] / 1e6)


class FakeExperiment:
    """comet_ml.Experiment's methods that tensorpack's monitor calls, recorded."""

    made: list = []

    def __init__(self, **kwargs):
        self.kwargs, self.calls = kwargs, []
        FakeExperiment.made.append(self)

    def __getattr__(self, method):
        return lambda *args, **kwargs: self.calls.append((method, args, kwargs))


@pytest.fixture
def fake_comet_ml(monkeypatch):
    module = types.ModuleType("comet_ml")
    module.Experiment = FakeExperiment
    FakeExperiment.made = []
    monkeypatch.setitem(sys.modules, "comet_ml", module)
    return module


def test_comet_ml_monitor_logs_what_tensorpacks_logs(fake_comet_ml, logger_dir):
    monitor = CometMLMonitor(tags=["a", "b"], project_name="p")
    (exp,) = FakeExperiment.made
    assert monitor.experiment is exp
    assert exp.kwargs == {"project_name": "p", "log_code": True, "auto_output_logging": None}
    train([DumpTensorAsImage("logits", scale=1)], [monitor])
    calls = exp.calls
    names = [c[0] for c in calls]
    assert names[:3] == ["add_tags", "set_code", "log_dependency"] and calls[0][1] == (["a", "b"],)
    graph = [c for c in calls if c[0] == "set_model_graph"][0][1][0]
    assert "conv0/W (3, 3, 1, 8) float32" in graph.splitlines()
    metrics = [(c[1][0], c[2]["step"]) for c in calls if c[0] == "log_metric"]
    assert ("cross_entropy_loss", 2) in metrics and ("cross_entropy_loss", 4) in metrics
    images = [c[2]["name"] for c in calls if c[0] == "log_image"]
    assert images[:2] == ["logits_step2_0", "logits_step2_1"] and len(images) == 2 * 8  # 2 epochs x 8 rows (a batch of 8, 3 logits)
    assert [c[1] for c in calls if c[0] == "log_epoch_end"] == [(1,), (2,)]
    assert names[-1] == "end"


def test_comet_ml_monitor_takes_an_experiment_alone_and_names_a_missing_comet_ml(monkeypatch):
    exp = FakeExperiment()
    assert CometMLMonitor(exp).experiment is exp and [c[0] for c in exp.calls] == ["set_code", "log_dependency"]
    with pytest.raises(ValueError, match="takes no tags"):
        CometMLMonitor(exp, tags=["x"])
    monkeypatch.setitem(sys.modules, "comet_ml", None)
    with pytest.raises(ImportError, match="CometMLMonitor needs comet_ml, which is not installed: pip install comet_ml"):
        CometMLMonitor()
