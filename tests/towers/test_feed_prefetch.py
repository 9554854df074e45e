"""FeedInput reads the next batch while a step computes (issue 28): the steps see the same batches
in the same order as without reading ahead, nothing is read ahead across an epoch's end (epoch
callbacks still change the next epoch's data), errors are raised by the step they belong to, and
after training the step is synchronous again, with no executor left running."""
from __future__ import annotations

import gc

import keras
import numpy as np
import pytest
import tensorflow as tf
from id_model import BatchRecorder, IdClassifier
from tensorflow.python.eager import executor as tf_executor  # the Executor whose deletion ends its thread

from trainstack.callbacks import tf_private
from trainstack.inputs import FeedInput
from trainstack.towers import SimpleTrainer, TrainConfig, launch_train_with_config
from trainstack.towers.tower.step import TracedStep

STEPS, EPOCHS, BATCH = 4, 3, 8


class Classifier(IdClassifier):
    """id_model's classifier, its weights starting the same in every run (compared across runs)."""

    def __init__(self) -> None:
        self.fc = keras.layers.Dense(2, kernel_initializer="ones")


class Batches:
    """``n`` batches with ids ``100 * epoch_tag + i``; records the trainer's ``global_step`` when
    each batch is produced. ``epoch_tag`` is what an epoch callback changes."""

    def __init__(self, n=STEPS, label=None):
        self.n, self.label, self.epoch_tag, self.read_at, self.trainer = n, label, 0, [], None
        rng = np.random.default_rng(0)
        self.x = [rng.normal(size=(BATCH, 4)).astype(np.float32) for _ in range(n)]

    def __len__(self):
        return self.n

    def __iter__(self):
        for i in range(self.n):
            self.read_at.append(self.trainer.global_step)
            label = np.full(BATCH, i % 2 if self.label is None else self.label, np.int32)
            yield self.x[i], label, np.full(BATCH, 100 * self.epoch_tag + i, np.int64)


class Recorder(BatchRecorder):
    """The ids and cost of every step; moves the dataflow's ``epoch_tag`` at each epoch's end."""

    def __init__(self, flow):
        super().__init__()
        self.flow = flow

    def _trigger_epoch(self):
        self.flow.epoch_tag += 1


def train(prefetch=True, flow=None, **config):
    flow = flow or Batches()
    recorder = Recorder(flow)
    trainer = SimpleTrainer()
    flow.trainer = trainer
    model = Classifier()
    launch_train_with_config(TrainConfig(model=model, data=FeedInput(flow, prefetch=prefetch),
                                         callbacks=[recorder], extra_callbacks=[], monitors=[],
                                         steps_per_epoch=STEPS, max_epoch=EPOCHS, **config), trainer)
    return trainer, flow, recorder, [w.numpy() for w in model.fc.weights]


def test_reading_ahead_trains_on_the_same_batches_as_reading_at_each_step():
    ahead, flow_ahead, rec_ahead, weights_ahead = train(prefetch=True)
    plain, flow_plain, rec_plain, weights_plain = train(prefetch=False)
    expected = {epoch + 1: [100 * epoch + i for i in range(STEPS) for _ in range(BATCH)] for epoch in range(EPOCHS)}
    assert rec_ahead.ids == rec_plain.ids == expected  # epoch callbacks reached each next epoch
    assert rec_ahead.costs == rec_plain.costs
    for a, b in zip(weights_ahead, weights_plain):
        np.testing.assert_array_equal(a, b)
    assert ahead.global_step == plain.global_step == STEPS * EPOCHS
    # without reading ahead each batch is read by its own step; with it, during the step before,
    # except each epoch's first, read after the epoch's callbacks (and none is read past the end)
    assert flow_plain.read_at == list(range(STEPS * EPOCHS))
    assert flow_ahead.read_at == [step if step % STEPS == 0 else step - 1 for step in range(STEPS * EPOCHS)]


def test_the_step_is_synchronous_again_after_training_and_its_executor_is_gone(monkeypatch):
    """Each training's asynchronous executor (a thread of TensorFlow's) is released when it ends:
    the Python object is the last reference, and deleting it joins the executor's thread."""
    made, deleted = [], []
    new_executor, delete = tf_private.new_async_executor, tf_executor.Executor.__del__

    def spied() -> object:
        executor = new_executor()
        made.append(id(executor))
        return executor

    def deleting(executor: object) -> None:
        deleted.append(id(executor))
        delete(executor)

    monkeypatch.setattr(tf_executor.Executor, "__del__", deleting)
    monkeypatch.setattr(tf_private, "new_async_executor", spied)
    trainer, *_ = train()
    step = trainer.train_op
    assert step.while_running is None and step._executor is None
    train()  # a second training starts an executor of its own and ends it
    gc.collect()
    assert len(made) == 2 and set(made) <= set(deleted)


def test_an_error_reading_a_batch_ahead_is_raised_by_the_step_that_needs_it():
    class Broken(Batches):
        def __iter__(self):
            for i, datapoint in enumerate(super().__iter__()):
                if i == 2:
                    raise RuntimeError("cannot decode image 2")
                yield datapoint

    flow = Broken()
    with pytest.raises(RuntimeError, match="cannot decode image 2"):
        train(flow=flow)
    assert flow.trainer.global_step == 2  # steps 0 and 1 ran, and finished
    assert flow.read_at == [0, 0, 1]  # the batch of step 2 was read (and failed) during step 1
    assert flow.trainer.train_op._executor is None


def test_a_failing_step_raises_its_own_error_and_leaves_the_step_usable():
    flow = Batches(label=7)  # a label out of range: the cross-entropy kernel refuses it
    with pytest.raises(tf.errors.InvalidArgumentError, match="label"):
        train(flow=flow)
    trainer = flow.trainer
    assert trainer.global_step == 0  # raised by step 0 itself, not by the next one
    good = {"tower0/x": np.ones((2, 4), np.float32), "tower0/label": np.zeros(2, np.int32),
            "tower0/id": np.zeros(2, np.int64)}
    assert np.isfinite(trainer.train_op(**good).numpy())  # no error is left in an executor


def test_a_traced_step_runs_while_running_during_each_call_and_returns_the_call_finished():
    v = tf.Variable(0.0)
    seen = []

    def body(feeds, fetches):
        v.assign_add(tf.reduce_sum(tf.debugging.check_numerics(feeds["x"], "x has a NaN")))
        return v.read_value(), {name: v.read_value() * 10 for name in fetches}

    step = TracedStep(body, {"x": tf.TensorSpec([None], tf.float32)})
    step.while_running = lambda: seen.append(len(seen))
    for i in range(3):
        output, values = step.run_with_fetches((), ["ten"] if i == 2 else (), {"x": np.ones(2, np.float32)})
        assert float(output) == 2.0 * (i + 1) and float(v.numpy()) == 2.0 * (i + 1)
    assert seen == [0, 1, 2] and values == {"ten": 60.0}

    def fail():
        raise ValueError("while running")

    step.while_running = fail
    with pytest.raises(ValueError, match="while running"):
        step.run_with_fetches((), (), {"x": np.ones(2, np.float32)})
    assert float(v.numpy()) == 8.0  # the call itself ran to its end
    step.while_running = seen.clear
    with pytest.raises(tf.errors.InvalidArgumentError, match="x has a NaN"):
        step.run_with_fetches((), (), {"x": np.full(2, np.nan, np.float32)})
    output, _ = step.run_with_fetches((), (), {"x": np.ones(2, np.float32)})  # the error was cleared
    assert float(output) == 10.0
    step.close()
    assert step._executor is None
    assert float(output) == 10.0 and float(output + 1) == 11.0  # a call's output outlives the executor
    step.while_running = None
    assert float(step(x=np.ones(1, np.float32))) == 11.0
