"""EstimatedTimeLeft and ThroughputTracker, on a fake clock where exact numbers matter."""
from __future__ import annotations

import logging
import types

import pytest

from trainstack.callbacks import CallbackFactory, EstimatedTimeLeft, PeriodicTrigger, ThroughputTracker, timing
from trainstack.loop import Trainer


class FakeClock:
    """Stands in for time.perf_counter in the timing module; steps advance it."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


@pytest.fixture
def clock(monkeypatch):
    clock = FakeClock()
    monkeypatch.setattr(timing, "time", types.SimpleNamespace(perf_counter=clock))
    return clock


def clocked_trainer(clock, seconds_per_step):
    """A plain trainer whose step takes ``seconds_per_step(epoch)`` on the fake clock."""
    trainer = Trainer()

    def step():
        clock.now += seconds_per_step(trainer.epoch_num)
        return {"loss": 1.0}

    trainer.train_op = step
    return trainer


def estimates(caplog):
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith("Estimated time left")]


# -- EstimatedTimeLeft ---------------------------------------------------------------------
def test_estimate_is_epochs_left_times_the_median_epoch(clock, caplog):
    caplog.set_level(logging.INFO, logger="trainstack.callbacks")
    # epochs of 2 steps: 10 s, 10 s, 100 s, then one more epoch
    trainer = clocked_trainer(clock, lambda epoch: 50.0 if epoch == 3 else 5.0)
    trainer.train([EstimatedTimeLeft()], [], steps_per_epoch=2, max_epoch=4)
    assert estimates(caplog) == ["Estimated time left: 30 seconds", "Estimated time left: 20 seconds",
                                 "Estimated time left: 10 seconds"]  # nothing when none is left


def test_mean_and_last_k_epochs(clock, caplog):
    caplog.set_level(logging.INFO, logger="trainstack.callbacks")
    trainer = clocked_trainer(clock, lambda epoch: 50.0 if epoch == 3 else 5.0)
    trainer.train([EstimatedTimeLeft(median=False)], [], steps_per_epoch=2, max_epoch=4)
    assert estimates(caplog)[-1] == "Estimated time left: 40 seconds"  # mean(10, 10, 100)

    caplog.clear()
    trainer = clocked_trainer(clock, lambda epoch: 50.0 if epoch == 3 else 5.0)
    trainer.train([EstimatedTimeLeft(last_k_epochs=1)], [], steps_per_epoch=2, max_epoch=4)
    assert estimates(caplog)[-1] == "Estimated time left: 1 minute 40 seconds"


def test_epoch_end_work_counts_in_the_estimate(clock, caplog):
    caplog.set_level(logging.INFO, logger="trainstack.callbacks")
    trainer = clocked_trainer(clock, lambda epoch: 5.0)
    validation = CallbackFactory(trigger=lambda cb: setattr(clock, "now", clock.now + 50.0))
    trainer.train([validation, EstimatedTimeLeft()], [], steps_per_epoch=2, max_epoch=3)
    assert estimates(caplog) == ["Estimated time left: 2 minutes", "Estimated time left: 1 minute"]


def test_no_estimate_without_a_max_epoch(linear_trainer, caplog):
    caplog.set_level(logging.INFO, logger="trainstack.callbacks")
    trainer = linear_trainer()
    stop_after_2 = CallbackFactory(trigger=lambda cb: cb.epoch_num == 2 and cb.trainer.request_stop())
    trainer.train([EstimatedTimeLeft(), stop_after_2], [], steps_per_epoch=2)
    assert trainer.epoch_num == 2 and estimates(caplog) == []


def test_estimated_time_left_rejects_bad_k():
    with pytest.raises(ValueError, match="last_k_epochs"):
        EstimatedTimeLeft(last_k_epochs=0)


@pytest.mark.parametrize("seconds, text", [
    (0.5, "0.5 seconds"), (1, "1 second"), (59.0, "59 seconds"), (61, "1 minute 1 second"),
    (3725, "1 hour 2 minutes 5 seconds"), (86400 + 7200, "1 day 2 hours"),
])
def test_humanize_time_delta(seconds, text):
    assert timing.humanize_time_delta(seconds) == text


# -- ThroughputTracker -------------------------------------------------------------------
def test_throughput_excludes_the_epoch_end_work(clock):
    trainer = clocked_trainer(clock, lambda epoch: 0.5 if epoch == 1 else 0.25)
    slow_validation = CallbackFactory(trigger=lambda cb: setattr(clock, "now", clock.now + 100.0))
    trainer.train([slow_validation, ThroughputTracker(samples_per_step=32)], [],
                  steps_per_epoch=4, max_epoch=2)
    assert trainer.monitors.get_history("Throughput/steps_per_sec") == [2.0, 4.0]
    assert trainer.monitors.get_history("Throughput/samples_per_sec") == [64.0, 128.0]


def test_throughput_with_a_real_step(linear_trainer):
    trainer = linear_trainer()
    trainer.train([ThroughputTracker()], [], steps_per_epoch=5, max_epoch=3)
    speeds = trainer.monitors.get_history("Throughput/steps_per_sec")
    assert len(speeds) == 3 and all(s > 0 for s in speeds)
    assert trainer.monitors.get_history("Throughput/samples_per_sec") == []


def test_throughput_triggered_inside_epochs(clock):
    trainer = clocked_trainer(clock, lambda epoch: 0.5)
    trainer.train([PeriodicTrigger(ThroughputTracker(), every_k_steps=3)], [],
                  steps_per_epoch=4, max_epoch=3)
    # reports at global steps 3, 6, 9, 12: always 3 steps of 0.5 s each
    assert trainer.monitors.get_history("Throughput/steps_per_sec") == [2.0] * 4


@pytest.mark.parametrize("bad", [0, -32, "32", True])
def test_throughput_rejects_bad_samples_per_step(bad):
    with pytest.raises(ValueError, match="samples_per_step"):
        ThroughputTracker(samples_per_step=bad)
