"""The parts of elastic Horovod that need no Horovod: the input's stream positions and the
chief gate. (The trainer itself, under horovodrun's elastic driver: test_horovod_elastic.py.)"""
from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from trainstack.distributed import ChiefGate, ElasticFeedInput, ScaleLearningRateOnResize
from trainstack.distributed.elastic_callbacks import notify_world_size_change
from trainstack.loop import Callback

SIGNATURE = [tf.TensorSpec([], tf.int32, "idx")]


def make_input(n: int, placement: list) -> ElasticFeedInput:
    source = ElasticFeedInput([(np.int32(i),) for i in range(n)], lambda: tuple(placement))
    source.setup(SIGNATURE)
    source.reset_state()
    return source


def fed(source: ElasticFeedInput) -> int:
    return int(source.next_feeds()["tower0/idx"])


def test_ranks_feed_disjoint_datapoints_and_the_position_survives_a_resize():
    """Rank r of size N feeds position + r; the position moves by N; a new size goes on from
    the same position, across the passes' boundary (5 datapoints a pass)."""
    rank0, rank1 = [0, 2], [1, 2]
    a, b = make_input(5, rank0), make_input(5, rank1)
    assert [(fed(a), fed(b)) for _ in range(2)] == [(0, 1), (2, 3)]
    assert a.position == b.position == 4
    rank0[1] = 1  # rank 1 left: rank 0 alone goes on from position 4
    assert [fed(a) for _ in range(3)] == [4, 0, 1]  # datapoint 4 of pass 0, then pass 1
    assert a.position == 7 and a.last_fed == 6
    a.position = 2  # a rollback to a committed position: the stream is read again from there
    assert fed(a) == 2 and a.size() == 5


def test_the_default_epoch_is_one_pass_at_the_starting_size():
    assert make_input(10, [0, 2]).size() == 5
    with pytest.raises(ValueError, match="fewer datapoints than the 4 ranks"):
        make_input(3, [0, 4]).size()


class Recorder(Callback):
    def __init__(self) -> None:
        self.calls: list[str] = []

    def _before_train(self) -> None:
        self.calls.append("before_train")

    def _before_epoch(self) -> None:
        self.calls.append("before_epoch")

    def _trigger_step(self) -> None:
        self.calls.append("trigger_step")

    def _after_train(self) -> None:
        self.calls.append("after_train")

    def on_world_size_change(self, old: int, new: int) -> None:
        self.calls.append(f"resize {old}->{new}")


class FakeTrainer:
    """What the gate asks of a trainer: is_chief (flipped by the test) and the loop's step."""

    def __init__(self, chief: bool) -> None:
        self.is_chief, self.global_step = chief, 0


def test_a_gated_callback_runs_only_on_rank0_and_catches_up_when_a_process_becomes_rank0():
    trainer = FakeTrainer(chief=False)
    inner = Recorder()
    gate = ChiefGate(inner)
    assert gate.chief_only is False and inner.chief_only is True
    gate.setup_graph(trainer)
    gate.before_train()
    gate.before_epoch()
    gate.trigger_step()
    assert inner.calls == []  # not rank 0: nothing got through
    trainer.is_chief, trainer.global_step = True, 7  # rank 0 died; this process is rank 0 now
    gate.before_epoch()
    gate.trigger_step()
    gate.after_train()
    assert inner.calls == ["before_train", "before_epoch", "trigger_step", "after_train"]


def test_a_gate_that_never_ran_skips_after_train():
    trainer = FakeTrainer(chief=False)
    inner = Recorder()
    gate = ChiefGate(inner)
    gate.setup_graph(trainer)
    gate.after_train()
    assert inner.calls == []


def test_the_resize_hook_reaches_wrapped_callbacks():
    class Group:
        def __init__(self, cbs: list) -> None:
            self.cbs = cbs

    class Holder:
        callbacks = None

    inner = Recorder()
    holder = Holder()
    holder.callbacks = Group([ChiefGate(inner), Callback()])
    assert notify_world_size_change(holder, 2, 1) == ["Recorder"]
    assert inner.calls == ["resize 2->1"]


def test_scale_learning_rate_on_resize():
    import keras  # noqa: PLC0415

    class Trainer:
        optimizer = keras.optimizers.SGD(0.2)

    cb = ScaleLearningRateOnResize()
    cb.setup_graph(Trainer())
    cb.on_world_size_change(2, 1)
    assert float(Trainer.optimizer.learning_rate.numpy()) == pytest.approx(0.1)
    cb.on_world_size_change(1, 4)
    assert float(Trainer.optimizer.learning_rate.numpy()) == pytest.approx(0.4)

    class Scheduled:
        optimizer = keras.optimizers.SGD(keras.optimizers.schedules.ExponentialDecay(0.1, 10, 0.9))

    with pytest.raises(TypeError, match="schedule"):
        ScaleLearningRateOnResize().setup_graph(Scheduled())
