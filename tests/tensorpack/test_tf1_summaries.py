"""tensorpack's in-graph summaries (issue 23, point 4), in scripts ported by changing their imports.

``tf.summary.scalar/image/histogram/text`` and ``tf.compat.v1.summary.*`` in ``build_graph``
are written by ``MergeAllSummaries`` (after each epoch by default) as in tensorpack:
images and histograms to TensorBoard, scalars to every monitor (TensorBoard, JSON,
console). They are computed only by the steps after which they are written. The event
files are read back with TensorBoard's own reader.
"""
from __future__ import annotations

import json
import logging

import keras
import numpy as np
import pytest
import tensorflow as tf
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from trainstack.callbacks import (
    JSONWriter,
    MergeAllSummaries,
    PeriodicTrigger,
    ScalarPrinter,
    TFEventWriter,
    get_summary_collection,
)
from trainstack.loop import Callback
from trainstack.tensorpack.input_source import QueueInput
from trainstack.tensorpack.tf1 import (
    ModelDesc,
    SimpleTrainer,
    TF1CallError,
    TowerContext,
    TowerFunc,
    TowerTrainer,
)
from trainstack.towers import TrainConfig, launch_train_with_config

STEPS = 3  # steps per epoch: one batch each


def batches(n=STEPS, batch=4):
    """``n`` batches of ``x`` [batch, 4] in [0, 1] (batch ``i`` holds ``(i + 1) / 10`` and ones)
    and labels; the same batches every epoch."""
    out = []
    for i in range(n):
        x = np.full((batch, 4), (i + 1) / 10, np.float32)
        x[:, 0] = 1.0
        out.append((x, np.arange(batch, dtype=np.int32) % 2))
    return out


class Model(ModelDesc):
    """A linear classifier; ``summaries(self, x, logits)`` (set by a test) makes its summaries."""

    def __init__(self, summaries=None, optimizer=None):
        self.fc = keras.layers.Dense(2, name="fc")
        self.summaries, self._optimizer = summaries, optimizer

    def inputs(self):
        return [tf.TensorSpec([None, 4], tf.float32, "x"), tf.TensorSpec([None], tf.int32, "label")]

    def build_graph(self, x, label):
        logits = tf.identity(self.fc(x), name="logits_out")
        cost = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=label, logits=logits),
                              name="cost")
        if self.summaries is not None:
            self.summaries(self, x, logits)
        return cost

    def optimizer(self):
        return self._optimizer(self) if self._optimizer is not None else keras.optimizers.SGD(0.1)


def train(model, logdir, df=None, callbacks=(), trainer=None, max_epoch=2, steps_per_epoch=None, data=None):
    trainer = trainer or SimpleTrainer()
    launch_train_with_config(TrainConfig(
        model=model, dataflow=None if data else df or batches(), data=data, max_epoch=max_epoch,
        callbacks=list(callbacks),
        steps_per_epoch=steps_per_epoch,
        monitors=[TFEventWriter(str(logdir)), JSONWriter(str(logdir)), ScalarPrinter()]), trainer)
    return trainer


def events(logdir):
    acc = EventAccumulator(str(logdir), size_guidance={"scalars": 0, "images": 0, "histograms": 0,
                                                       "tensors": 0})
    acc.Reload()
    return acc


def stats(logdir):
    with open(logdir / "stats.jsonl") as f:
        return [json.loads(line) for line in f]


def decoded(image_event):
    return tf.io.decode_png(image_event.encoded_image_string).numpy()


# -- what is written ------------------------------------------------------------------------------
def tensorpack_summaries(self, x, logits):
    """The summaries of a tensorpack ``build_graph``, in both APIs."""
    tf.summary.scalar("x_sum", tf.reduce_sum(x))
    with tf.name_scope("inputs"):
        tf.summary.image("v2", tf.reshape(x, [-1, 2, 2, 1]), max_outputs=2)
        tf.compat.v1.summary.image("v1", tf.reshape(x, [-1, 2, 2, 1]), max_outputs=1)
    tf.compat.v1.summary.histogram("x", x)
    tf.summary.histogram("logits", logits, buckets=5)
    tf.compat.v1.summary.scalar("x_max", tf.reduce_max(x), family="stats")
    tf.compat.v1.summary.scalar("x_sum", 2 * tf.reduce_sum(x))  # TF1 made its tags unique: x_sum_1
    tf.summary.text("note", tf.constant("hello"))


def test_summaries_in_build_graph_are_written_by_merge_all_summaries_after_each_epoch(tmp_path, caplog):
    caplog.set_level(logging.INFO)
    train(Model(tensorpack_summaries), tmp_path)
    acc = events(tmp_path)
    last = batches()[-1][0]  # the epoch's last step's batch: its summaries are written

    # scalars: TensorBoard, the JSON monitor and the console, after each epoch
    assert [(e.step, e.value) for e in acc.Scalars("x_sum")] == [(3, pytest.approx(last.sum())),
                                                                 (6, pytest.approx(last.sum()))]
    assert [e.value for e in acc.Scalars("stats/stats/x_max")] == [1.0, 1.0]  # TF1's family tag
    records = stats(tmp_path)
    assert [r["epoch_num"] for r in records] == [1, 2]
    assert all(r["x_sum"] == pytest.approx(last.sum()) and r["stats/stats/x_max"] == 1.0 for r in records)
    assert [r["x_sum_1"] for r in records] == [pytest.approx(2 * last.sum())] * 2
    assert f"x_sum: {last.sum():.5g}" in caplog.text

    # images: TensorBoard, under the name scope; tf.summary clips floats to [0, 1], tf.compat.v1
    # scales each image so that its largest value is 255
    tags = acc.Tags()["images"]
    assert sorted(tags) == ["inputs/v1", "inputs/v2/0", "inputs/v2/1"]
    v2 = decoded(acc.Images("inputs/v2/0")[-1])
    np.testing.assert_array_equal(v2[..., 0], (last[0].reshape(2, 2) * 255.5).astype(np.uint8))
    v1 = decoded(acc.Images("inputs/v1")[-1])
    np.testing.assert_array_equal(v1[..., 0], (last[0].reshape(2, 2) * 255.0).astype(np.uint8))
    assert [e.step for e in acc.Images("inputs/v1")] == [3, 6]

    # histograms: TensorBoard
    histo = acc.Histograms("x")[-1].histogram_value
    assert (histo.min, histo.max, histo.num) == (pytest.approx(last.min()), 1.0, last.size)
    assert histo.sum == pytest.approx(last.sum())
    assert len(acc.Histograms("logits")[-1].histogram_value.bucket) == 5
    # text: TensorBoard's text dashboard
    note = acc.Tensors("note")[-1]
    assert tf.make_ndarray(note.tensor_proto) == b"hello"
    # the JSON monitor and the console have the scalars only
    keys = {key for r in records for key in r}
    assert {"x_sum", "x_sum_1", "stats/stats/x_max"} <= keys
    assert not keys & {"inputs/v1", "inputs/v2", "inputs/v2/0", "x", "logits", "note"}


def counting(calls):
    """A summary whose value is computed by a (stateless) Python function that counts its calls."""
    def count(x):
        calls.append(1)
        return x

    def summaries(self, x, logits):
        counted = tf.numpy_function(count, [tf.reduce_mean(x)], tf.float32, stateful=False)
        tf.summary.scalar("counted", tf.reshape(counted, []))
        tf.summary.image("logits", tf.reshape(tf.nn.softmax(logits), [1, -1, 2, 1]))
    return summaries


class RunSizes(Callback):
    def __init__(self):
        self.sizes = set()

    def _trigger_step(self):
        self.sizes.add(self.trainer.loop.run_size)


@pytest.mark.parametrize("steps_per_run", [1, 3])
def test_a_summary_is_computed_only_on_the_steps_after_which_it_is_written(steps_per_run, tmp_path):
    calls, runs = [], RunSizes()
    df = batches(n=6)
    train(Model(counting(calls)), tmp_path, data=QueueInput(df), trainer=SimpleTrainer(steps_per_run=steps_per_run),
          max_epoch=3, steps_per_epoch=6, callbacks=[runs])
    assert runs.sizes == {steps_per_run}  # 3: two steps in the graph's loop, then the call's last
    # 18 steps; the summaries are written after each epoch's last step, and computed there only
    assert len(calls) == 3
    assert [e.step for e in events(tmp_path).Scalars("counted")] == [6, 12, 18]
    assert [r["counted"] for r in stats(tmp_path)] == [pytest.approx(df[-1][0].mean())] * 3


def test_with_a_period_they_are_computed_on_those_steps_too(tmp_path):
    calls = []
    train(Model(counting(calls)), tmp_path, df=batches(n=5), max_epoch=2,
          callbacks=[MergeAllSummaries(period=2)])
    # the default callbacks hold another MergeAllSummaries: each writes after the steps it writes
    # after; a step computes the summaries once (local steps 1, 3 and the last, 4, of each epoch)
    assert len(calls) == 6
    assert sorted({e.step for e in events(tmp_path).Scalars("counted")}) == [2, 4, 5, 7, 9, 10]


def test_run_alone_writes_the_epochs_last_step_in_its_trigger(tmp_path):
    calls = []
    train(Model(counting(calls)), tmp_path, df=batches(n=4), max_epoch=2,
          callbacks=[PeriodicTrigger(MergeAllSummaries(run_alone=True), every_k_epochs=1)])
    assert len(calls) == 2
    assert [e.step for e in events(tmp_path).Scalars("counted")] == [4, 4, 8, 8]  # and the default's


# -- which towers record ----------------------------------------------------------------------------
def test_inference_towers_record_and_compute_nothing(tmp_path):
    calls = []
    trainer = train(Model(counting(calls)), tmp_path, max_epoch=1)
    recorded = trainer.summary_collection.fetched_summaries()
    assert sorted(name for name, _, _ in recorded) == ["counted", "logits"]
    default = get_summary_collection().fetched_summaries()
    predictor = trainer.get_predictor(["x"], ["logits_out"])  # an inference tower of the same model
    assert predictor(batches()[0][0])[0].shape == (4, 2)
    assert len(calls) == 1  # the epoch's last training step only
    assert trainer.summary_collection.fetched_summaries() == recorded
    assert get_summary_collection().fetched_summaries() == default


def test_a_tensorpack_gan_trainer_writes_the_summaries_of_its_tower(tmp_path):
    """tensorpack's GANTrainer builds its tower in __init__; DCGAN summarizes its samples there."""
    class GANTrainer(TowerTrainer):
        def __init__(self, input, model):
            super().__init__()
            self.register_callback(input.setup(model.get_input_signature()))
            self.tower_func = TowerFunc(model.build_graph, model.get_input_signature())
            with TowerContext("", is_training=True):
                cost = self.tower_func(*input.get_input_tensors())
            self.train_op = model.get_optimizer().minimize(cost, name="train_op")

    calls = []
    model = Model(counting(calls))
    trainer = GANTrainer(QueueInput(batches()), model)
    trainer.train_with_defaults(steps_per_epoch=STEPS, max_epoch=2,
                                monitors=[TFEventWriter(str(tmp_path)), JSONWriter(str(tmp_path))])
    assert len(calls) == 2
    assert [e.step for e in events(tmp_path).Scalars("counted")] == [3, 6]
    assert sorted(events(tmp_path).Tags()["images"]) == ["logits"]


# -- outside towers, and what stays refused -----------------------------------------------------------
def test_the_learning_rate_summarized_in_optimizer_is_written_each_epoch(tmp_path):
    class Halve(Callback):
        def _trigger_epoch(self):
            lr.assign(lr * 0.5)

    lr = tf.Variable(0.1, trainable=False, name="learning_rate")

    def optimizer(self):
        tf.summary.scalar("learning_rate", lr)  # tensorpack's optimizer(): recorded, read each epoch
        return keras.optimizers.SGD(0.1)

    train(Model(optimizer=optimizer), tmp_path, callbacks=[Halve()], max_epoch=3)
    assert [r["learning_rate"] for r in stats(tmp_path)] == pytest.approx([0.1, 0.05, 0.025])
    assert [(e.step, e.value) for e in events(tmp_path).Scalars("learning_rate")] == [
        (3, pytest.approx(0.1)), (6, pytest.approx(0.05)), (9, pytest.approx(0.025))]
    assert not bool(tf.summary.scalar("learning_rate", lr))  # outside a trainer: TensorFlow's own


def test_collections_keep_tf1s_meaning_only_the_summaries_collection_is_written(tmp_path, caplog):
    """TF1 merged the ``summaries`` collection only: a summary given other collections (alexnet.py's
    ``collections=['AAA']``) was never written; one that lists ``summaries`` was."""
    def summaries(self, x, logits):
        tf.compat.v1.summary.scalar("elsewhere", tf.reduce_sum(x), collections=["AAA"])
        tf.compat.v1.summary.image("elsewhere_image", tf.reshape(x, [-1, 2, 2, 1]), collections=["AAA"])
        tf.compat.v1.summary.scalar("both", tf.reduce_sum(x), collections=[tf.compat.v1.GraphKeys.SUMMARIES, "AAA"])

    with caplog.at_level(logging.INFO, logger="trainstack.tensorpack"):
        train(Model(summaries), tmp_path, max_epoch=1)
    row = stats(tmp_path)[-1]
    assert row["both"] == pytest.approx(4 * (1 + 3 * STEPS / 10))  # the last batch: ones and (i + 1) / 10
    assert "elsewhere" not in row
    assert "elsewhere_image" not in events(tmp_path).Tags()["images"]
    unwritten = [r for r in caplog.records if "not written, as in TF1" in r.getMessage()]
    assert "'elsewhere', collections=['AAA'])" in unwritten[0].getMessage()
    assert {r.levelno for r in unwritten} == {logging.WARNING}  # a summary that goes nowhere is said loudly


@pytest.mark.parametrize("call, message", [
    (lambda x: tf.compat.v1.summary.merge_all(), r"merge_all\(\).*MergeAllSummaries"),
    (lambda x: tf.compat.v1.summary.audio("a", x, 8000), r"no trainstack monitor writes audio"),
    (lambda x: tf.cond(tf.reduce_sum(x) > 0, lambda: tf.summary.scalar("s", 1.0), lambda: False),
     r"inside a tf.cond"),
])
def test_what_has_no_meaning_in_tensorflow_2_is_refused_with_the_way_out(call, message, tmp_path):
    with pytest.raises(TF1CallError, match=message):
        train(Model(lambda self, x, logits: call(x)), tmp_path, max_epoch=1)


def test_text_in_a_step_compiled_with_xla_is_refused(tmp_path):
    with pytest.raises(TF1CallError, match=r"summary.text\('note', ...\) in a step compiled with XLA"):
        train(Model(lambda self, x, logits: tf.summary.text("note", tf.constant("hi"))), tmp_path,
              trainer=SimpleTrainer(xla_compile=True), max_epoch=1)
