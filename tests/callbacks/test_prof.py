"""Profiling callbacks: GPU utilization and peak memory trackers, GraphProfiler."""
from __future__ import annotations

import glob
import logging
import os
import threading

import pytest
import tensorflow as tf

from trainstack.callbacks import GPUUtilizationTracker, GraphProfiler, PeakMemoryTracker, unset_logger_dir
from trainstack.callbacks import gpu as gpu_module
from trainstack.callbacks.nvml import NVML, NVMLError
from trainstack.loop import Callback

STEPS, EPOCHS = 3, 2


def _nvml_available() -> bool:
    try:
        NVML().shutdown()
        return True
    except NVMLError:
        return False


HAS_GPU = bool(tf.config.list_physical_devices("GPU"))
HAS_NVML = _nvml_available()


def needs_gpu(test):
    return pytest.mark.gpu(pytest.mark.skipif(not HAS_GPU, reason="no GPU visible to TensorFlow")(test))


def needs_nvml(test):
    return pytest.mark.gpu(pytest.mark.skipif(not HAS_NVML, reason="no NVML (NVIDIA driver)")(test))


class Crash(Callback):
    def __init__(self, at_step):
        self.at_step = at_step

    def _trigger_step(self):
        if self.global_step == self.at_step:
            raise RuntimeError("boom")


def run(trainer, callbacks, epochs=EPOCHS, **kwargs):
    trainer.train(callbacks, [], steps_per_epoch=STEPS, max_epoch=epochs, **kwargs)
    return trainer


def scalars(trainer, prefix):
    return {n: trainer.monitors.get_history(n) for n in trainer.monitors.scalar_names()
            if n.startswith(prefix)}


# -- GPUUtilizationTracker ---------------------------------------------------------------------
@pytest.mark.skipif(HAS_NVML, reason="NVML is present; this tests the machine without it")
def test_gpu_utilization_without_nvml_says_so_and_does_nothing(linear_trainer, caplog):
    with caplog.at_level(logging.INFO, logger="trainstack.callbacks"):
        trainer = run(linear_trainer(), [GPUUtilizationTracker()])
    lines = [r for r in caplog.records if "GPUUtilizationTracker" in r.getMessage()]
    assert len(lines) == 1 and "NVML is not available" in lines[0].getMessage()
    assert scalars(trainer, "GPUUtil") == {}


class StandInNVML:
    """Stands in for the NVML library (not for a GPU) to test the sampling thread's life cycle:
    device ``d`` reads ``10 * (d + 1)`` percent; reading fails after ``fail_after`` reads."""

    instances: list = []

    def __init__(self, count=2, fail_after=None):
        self.count, self.fail_after, self.reads, self.closed = count, fail_after, 0, False
        StandInNVML.instances.append(self)

    def device_count(self):
        return self.count

    def handle(self, device):
        return device

    def utilization(self, handle):
        self.reads += 1
        if self.fail_after is not None and self.reads > self.fail_after:
            raise NVMLError("NVML nvmlDeviceGetUtilizationRates failed: GPU is lost (code 15)")
        return 10 * (handle + 1)

    def shutdown(self):
        self.closed = True


@pytest.fixture
def stand_in_nvml(monkeypatch):
    StandInNVML.instances = []

    def use(**kwargs):
        monkeypatch.setattr(gpu_module, "NVML", lambda: StandInNVML(**kwargs))
    return use


def sampler_threads():
    return [t for t in threading.enumerate() if t.name == "GPUUtilizationTracker"]


def test_gpu_utilization_averages_per_device_each_epoch(linear_trainer, stand_in_nvml, monkeypatch):
    stand_in_nvml(count=2)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    tracker = GPUUtilizationTracker(interval=0.001)
    trainer = run(linear_trainer(), [tracker])
    assert scalars(trainer, "GPUUtil") == {"GPUUtil/0": [10.0] * EPOCHS, "GPUUtil/1": [20.0] * EPOCHS}
    nvml, = StandInNVML.instances
    assert nvml.reads >= 2 * EPOCHS and nvml.closed and sampler_threads() == []


@pytest.mark.parametrize("env, devices", [("1", ["GPUUtil/1"]), ("0,1", ["GPUUtil/0", "GPUUtil/1"])])
def test_gpu_utilization_follows_cuda_visible_devices(linear_trainer, stand_in_nvml, monkeypatch,
                                                       env, devices):
    stand_in_nvml(count=2)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", env)
    trainer = run(linear_trainer(), [GPUUtilizationTracker(interval=0.001)], epochs=1)
    assert sorted(scalars(trainer, "GPUUtil")) == devices


def test_gpu_utilization_with_no_visible_gpu(linear_trainer, stand_in_nvml, monkeypatch, caplog):
    stand_in_nvml(count=2)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    with caplog.at_level(logging.WARNING, logger="trainstack.callbacks"):
        trainer = run(linear_trainer(), [GPUUtilizationTracker()], epochs=1)
    assert "no GPU to track" in caplog.text and scalars(trainer, "GPUUtil") == {}


def test_gpu_utilization_thread_stops_when_training_fails(linear_trainer, stand_in_nvml):
    stand_in_nvml(count=1)
    tracker = GPUUtilizationTracker(devices=[0], interval=0.001)
    with pytest.raises(RuntimeError, match="boom"):
        run(linear_trainer(), [tracker, Crash(at_step=STEPS + 1)])
    assert sampler_threads() == [] and StandInNVML.instances[0].closed


def test_gpu_utilization_read_failure_stops_tracking_not_training(linear_trainer, stand_in_nvml,
                                                                  caplog):
    stand_in_nvml(count=1, fail_after=0)
    with caplog.at_level(logging.ERROR, logger="trainstack.callbacks"):
        trainer = run(linear_trainer(), [GPUUtilizationTracker(devices=[0], interval=0.001)])
    assert trainer.global_step == STEPS * EPOCHS and scalars(trainer, "GPUUtil") == {}
    assert caplog.text.count("GPU is lost") == 1


@pytest.mark.parametrize("devices", [[], [True], [1.5], [None]])
def test_gpu_utilization_refuses_bad_devices(devices):
    with pytest.raises(ValueError, match="devices must be a non-empty list"):
        GPUUtilizationTracker(devices=devices)


@needs_nvml
def test_gpu_utilization_on_a_real_gpu(linear_trainer):
    trainer = run(linear_trainer(), [GPUUtilizationTracker(devices=[0], interval=0.05)])
    values = trainer.monitors.get_history("GPUUtil/0")
    assert len(values) == EPOCHS and all(0 <= v <= 100 for v in values)


# -- PeakMemoryTracker ---------------------------------------------------------------------------
@pytest.mark.skipif(HAS_GPU, reason="a GPU is present; this tests the machine without one")
def test_peak_memory_without_gpu_says_so_and_does_nothing(linear_trainer, caplog):
    with caplog.at_level(logging.INFO, logger="trainstack.callbacks"):
        trainer = run(linear_trainer(), [PeakMemoryTracker()])
    lines = [r for r in caplog.records if "PeakMemoryTracker" in r.getMessage()]
    assert len(lines) == 1 and "sees no GPU" in lines[0].getMessage()
    assert scalars(trainer, "PeakMemory") == {}


def test_peak_memory_refuses_unknown_devices(linear_trainer):
    with pytest.raises(ValueError, match="'CPU:0' is not a GPU"):
        PeakMemoryTracker(devices=["CPU:0"])
    with pytest.raises(ValueError, match=r"TensorFlow sees no \['GPU:7'\]"):
        run(linear_trainer(), [PeakMemoryTracker(devices=["/device:GPU:7"])])


@needs_gpu
def test_peak_memory_on_a_real_gpu(linear_trainer):
    trainer = run(linear_trainer(batch=4096), [PeakMemoryTracker(devices=[0])])
    values = trainer.monitors.get_history("PeakMemory(MB)/GPU:0")
    assert len(values) == EPOCHS and all(v > 0 for v in values)


# -- GraphProfiler ---------------------------------------------------------------------------------
@pytest.fixture
def profiler_calls(monkeypatch):
    """Records the global step at each real tf.profiler start/stop."""
    calls = []
    for name in ("start", "stop"):
        real = getattr(tf.profiler.experimental, name)

        def spy(*args, _real=real, _name=name, **kwargs):
            calls.append(_name)
            return _real(*args, **kwargs)
        monkeypatch.setattr(tf.profiler.experimental, name, spy)
    return calls


class StepAt(Callback):
    """Records (global_step, call) whenever the profiler was started or stopped in the last step."""

    def __init__(self, calls):
        self.calls, self.seen = calls, []

    def _trigger_step(self):
        self.seen.append((self.global_step, list(self.calls)))


def trace_files(dirname):
    return glob.glob(os.path.join(dirname, "plugins", "profile", "*", "*.xplane.pb"))


def test_graph_profiler_traces_the_chosen_steps(linear_trainer, logger_dir, profiler_calls):
    # monitors and later callbacks run after the profiler in trigger_step, so StepAt sees its calls
    steps = StepAt(profiler_calls)
    run(linear_trainer(), [GraphProfiler(steps=(2, 4)), steps])
    assert steps.seen[0] == (1, ["start"])           # started before step 2 runs
    assert steps.seen[3] == (4, ["start", "stop"])   # stopped once step 4 has run
    assert profiler_calls == ["start", "stop"]
    assert len(trace_files(logger_dir)) == 1


def test_graph_profiler_from_the_first_step_and_a_crash_inside(linear_trainer, tmp_path, profiler_calls):
    unset_logger_dir()
    with pytest.raises(RuntimeError, match="boom"):
        run(linear_trainer(), [GraphProfiler(steps=(1, 100), dump_dir=str(tmp_path)), Crash(at_step=2)])
    assert profiler_calls == ["start", "stop"] and len(trace_files(str(tmp_path))) == 1


def test_graph_profiler_without_dir_or_after_the_window(linear_trainer, logger_dir, caplog,
                                                         profiler_calls):
    trainer = linear_trainer()
    trainer.loop.load_state_dict({"starting_epoch": 1, "max_epoch": 2, "steps_per_epoch": STEPS,
                                  "epoch_num": 2, "local_step": 2, "global_step": 6,
                                  "epoch_finished": True})
    with caplog.at_level(logging.WARNING, logger="trainstack.callbacks"):
        run(trainer, [GraphProfiler(steps=(2, 3))], epochs=3)
    assert "steps 2..3 are already done (global_step=6)" in caplog.text
    unset_logger_dir()
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="trainstack.callbacks"):
        run(linear_trainer(), [GraphProfiler(steps=(1, 2))])
    assert "GraphProfiler: no logger directory is set" in caplog.text
    assert profiler_calls == []


@pytest.mark.parametrize("steps", [(0, 3), (5, 4), (1,), "ab", None])
def test_graph_profiler_refuses_bad_steps(steps):
    with pytest.raises(ValueError, match="GraphProfiler: steps must"):
        GraphProfiler(steps=steps)
