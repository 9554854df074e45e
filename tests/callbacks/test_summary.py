"""Summaries recorded in a traced step, and the callbacks that report them."""
from __future__ import annotations

import glob
import threading

import numpy as np
import pytest
import tensorflow as tf

from trainstack.callbacks.summary import (
    SummaryCollection,
    get_summary_collection,
    summary_collection_scope,
)
from trainstack.callbacks.summary_callbacks import MergeAllSummaries, MovingAverageSummary, SimpleMovingAverage
from trainstack.callbacks.summary_recording import add_moving_summary, add_tensor_summary
from trainstack.callbacks.tfevent import TFEventWriter
from trainstack.loop import MonitorBase

DECAY = 0.9


class Recorder(MonitorBase):
    """Keeps (global_step, name, value) of every scalar and (global_step, summary) of every event."""

    def __init__(self):
        self.scalars, self.events = [], []

    def process_scalar(self, name, value):
        self.scalars.append((self.global_step, name, value))

    def process_event(self, event):
        self.events.append((self.global_step, event))

    def steps_of(self, name):
        return [s for s, n, _ in self.scalars if n == name]

    def values_of(self, name):
        return [v for _, n, v in self.scalars if n == name]


@pytest.fixture
def summary_trainer(linear_trainer):
    """A linear trainer whose step records summaries into its own collection, as a tower would."""

    class SummaryTrainer(linear_trainer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.summary_collection = SummaryCollection("test")
            self.losses, self.emas, self.w_values = [], [], []
            inner = self._step

            @tf.function
            def step():
                out = inner()
                ema, = add_moving_summary(out["loss"], decay=DECAY, name="loss")
                add_tensor_summary(out["loss"], ["scalar"], name="last_loss")
                add_tensor_summary(self.w, ["histogram", "rms"])
                return {**out, "loss_ema": ema}

            self._step = step

        def run_step(self):
            # the tower layer's way: trace (on the first call) inside the collection's scope
            with summary_collection_scope(self.summary_collection):
                out = super().run_step()
            self.losses.append(float(out["loss"]))
            self.emas.append(float(out["loss_ema"]))
            self.w_values.append(self.w.numpy().copy())
            return out

    return SummaryTrainer


def numpy_ema(values, decay=DECAY):
    biased, out = 0.0, []
    for t, v in enumerate(values, 1):
        biased = decay * biased + (1 - decay) * v
        out.append(biased / (1 - decay ** t))
    return out


def test_moving_average_summary_reports_the_in_graph_ema(summary_trainer):
    trainer, rec = summary_trainer(), Recorder()
    trainer.train([MovingAverageSummary()], [rec], steps_per_epoch=5, max_epoch=2)
    expected = numpy_ema(trainer.losses)
    # the EMA returned by add_moving_summary is updated inside every step
    np.testing.assert_allclose(trainer.emas, expected, rtol=1e-5)
    # MovingAverageSummary reports it after each epoch, under the tensor's name
    assert rec.steps_of("loss") == [5, 10]
    np.testing.assert_allclose(rec.values_of("loss"), [expected[4], expected[9]], rtol=1e-5)
    assert trainer.summary_collection.moving_average_names == ["loss"]


def test_merge_all_summaries_reports_at_period_and_epoch_end(summary_trainer):
    trainer, rec = summary_trainer(), Recorder()
    trainer.train([MergeAllSummaries(period=3)], [rec], steps_per_epoch=7, max_epoch=2)
    # every 3rd step of an epoch (local steps 2, 5) and the epoch's last step (6)
    assert rec.steps_of("last_loss") == [3, 6, 7, 10, 13, 14]
    assert rec.steps_of("w-rms") == [3, 6, 7, 10, 13, 14]
    for step, value in zip(rec.steps_of("last_loss"), rec.values_of("last_loss")):
        assert value == pytest.approx(trainer.losses[step - 1], rel=1e-6)
    for step, value in zip(rec.steps_of("w-rms"), rec.values_of("w-rms")):
        w = trainer.w_values[step - 1]
        assert value == pytest.approx(float(np.sqrt(np.mean(w ** 2))), rel=1e-5)
    assert [s for s, _ in rec.events] == [3, 6, 7, 10, 13, 14]
    step, summary = rec.events[-1]
    (value,) = summary.value
    assert value.tag == "w-histogram"
    assert value.histo.num == 3
    assert value.histo.sum == pytest.approx(float(trainer.w_values[-1].sum()), rel=1e-5)
    # the moving average is not a merged summary: MovingAverageSummary reports it
    assert rec.steps_of("loss") == []


def test_merge_all_summaries_run_alone_reports_at_trigger(summary_trainer):
    trainer, rec = summary_trainer(), Recorder()
    trainer.train([MergeAllSummaries(run_alone=True)], [rec], steps_per_epoch=4, max_epoch=2)
    assert rec.steps_of("last_loss") == [4, 8]
    assert trainer.callbacks.active("trigger_step") == []  # period=0: free on steps


def test_histograms_reach_tensorboard_event_files(summary_trainer, tmp_path):
    trainer = summary_trainer()
    trainer.train([MergeAllSummaries()], [TFEventWriter(logdir=str(tmp_path))],
                  steps_per_epoch=3, max_epoch=1)
    tags = set()
    for path in glob.glob(str(tmp_path / "events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(path):
            tags.update(v.tag for v in event.summary.value)
    assert {"w-histogram", "w-rms", "last_loss"} <= tags


def test_simple_moving_average_is_the_window_mean(linear_trainer):
    class Trainer(linear_trainer):
        losses: list

        def run_step(self):
            out = super().run_step()
            self.losses.append(float(out["loss"]))

    trainer, rec = Trainer(), Recorder()
    trainer.losses = []
    trainer.train([SimpleMovingAverage(["loss", "w_norm:0"], window_size=4, prefix="train/")], [rec],
                  steps_per_epoch=6, max_epoch=2)
    assert rec.steps_of("train/loss/SMA") == [6, 12]
    assert rec.values_of("train/loss/SMA") == pytest.approx(
        [np.mean(trainer.losses[2:6]), np.mean(trainer.losses[8:12])], rel=1e-12)
    assert rec.steps_of("train/w_norm/SMA") == [6, 12]


def test_moving_summary_naming_and_duplicates():
    coll = SummaryCollection()
    with summary_collection_scope(coll):
        with pytest.raises(ValueError, match="has no name"):
            add_moving_summary(tf.constant(1.0))
        with pytest.raises(ValueError, match="scalars"):
            add_moving_summary(tf.ones(3), name="vec")
        with pytest.raises(ValueError, match="one non-empty name per tensor"):
            add_moving_summary(tf.constant(1.0), tf.constant(2.0), name="a")
        with pytest.raises(TypeError, match="TF1 graph collections"):
            add_moving_summary(tf.constant(1.0), name="a", summary_collections=["summaries"])

        @tf.function
        def twice(x):
            add_moving_summary(x, name="x")
            add_moving_summary(x * 2, name="x")

        with pytest.raises(ValueError, match="recorded twice while tracing"):
            twice(tf.constant(1.0))

        @tf.function
        def named(x):
            y = tf.identity(x, name="tower0/cost")
            return add_moving_summary(y, decay=0.5)[0]

        named(tf.constant(2.0))
        named(tf.constant(4.0, tf.float64))  # a retrace updates the same average
        assert coll.moving_average_names == ["x", "cost"]
        # 0.5-decay debiased EMA of 2, 4: (0.25*2 + 0.5*4) / 0.75
        assert coll.moving_average_values()["cost"] == pytest.approx(2.5 / 0.75)
        with pytest.raises(ValueError, match="already a moving average"):
            add_tensor_summary(tf.constant(1.0), "scalar", name="cost")


def test_scopes_discard_nest_and_stay_in_their_thread():
    a, b = SummaryCollection("a"), SummaryCollection("b")
    default = get_summary_collection()
    seen = []
    with summary_collection_scope(a):
        with summary_collection_scope(b):
            assert get_summary_collection() is b
            thread = threading.Thread(target=lambda: seen.append(get_summary_collection()))
            thread.start()
            thread.join()
        assert get_summary_collection() is a
        with summary_collection_scope(None):
            assert add_moving_summary(tf.constant(1.0), name="dropped") == []
            add_tensor_summary(tf.constant(1.0), "scalar", name="dropped")
    assert seen == [default]
    assert get_summary_collection() is default
    assert len(a) == 0 and len(b) == 0


def test_bad_arguments_fail_early():
    with pytest.raises(ValueError, match="train_op"):
        MovingAverageSummary(train_op="train_op")
    with pytest.raises(TypeError, match="SummaryCollection"):
        MovingAverageSummary(collection="MOVING_SUMMARY_OPS")
    with pytest.raises(ValueError, match="period"):
        MergeAllSummaries(period=-1)
    with pytest.raises(TypeError, match="SummaryCollection"):
        MergeAllSummaries(key="summaries")
    with pytest.raises(ValueError, match="window_size"):
        SimpleMovingAverage(["loss"], window_size=0)
    with pytest.raises(TypeError, match="value names"):
        SimpleMovingAverage([1], window_size=2)
    with pytest.raises(ValueError, match="unknown"):
        add_tensor_summary(tf.constant(1.0), ["scalar", "median"], name="x")
    with pytest.raises(ValueError, match="needs a 0-d value"):
        add_tensor_summary(tf.ones(3), ["scalar"], name="x", collection=SummaryCollection())


def test_histograms_are_computed_in_the_step_under_xla_and_retraces():
    import keras

    from trainstack.callbacks.summary_callbacks import _histogram

    layer = keras.layers.Dense(2, name="dense")  # a fixed name: Keras numbers unnamed layers per process
    layer.build((None, 3))
    coll = SummaryCollection()

    @tf.function(jit_compile=True)
    def step(x):
        add_tensor_summary(x, ["histogram", "sparsity"], name="act")
        add_tensor_summary(layer.kernel, "rms")  # a variable: read when reported
        return layer(x)

    rng = np.random.default_rng(1)
    data = rng.normal(size=(7, 3)).astype("float32")
    data[0, 0], data[1, 1], data[2, 2] = 0.0, np.nan, np.inf
    with summary_collection_scope(coll):
        step(tf.constant(rng.normal(size=(4, 3)).astype("float32")))
        step(tf.constant(data))  # another batch size: a retrace into the same entries
    values = {name: value for name, _, value in coll.summary_values()}
    assert set(values) == {"act-histogram", "act-sparsity", "dense/kernel-rms"}
    assert values["act-sparsity"] == pytest.approx(1 / 21)
    kernel = layer.kernel.numpy()
    assert values["dense/kernel-rms"] == pytest.approx(float(np.sqrt(np.mean(kernel ** 2))), rel=1e-6)
    proto = _histogram(values["act-histogram"])
    finite = data[np.isfinite(data)]
    counts, edges = np.histogram(finite, bins=30)
    assert (proto.num, proto.min, proto.max) == (finite.size, finite.min(), finite.max())
    assert list(proto.bucket) == counts.tolist()
    np.testing.assert_allclose(proto.bucket_limit, edges[1:], rtol=1e-6, atol=1e-6)
    assert proto.sum_squares == pytest.approx(float(np.sum(finite.astype(np.float64) ** 2)), rel=1e-5)


def fetching_trainer(fetches_summary: bool):
    """A loop trainer with its own collection; its step gives the value "x" (= the step), and,
    when ``fetches_summary``, its collection says summary "x_summary" is computed when "x" is fetched."""
    from trainstack.loop import Trainer

    trainer = Trainer()
    trainer.summary_collection = SummaryCollection(f"fetching={fetches_summary}")
    if fetches_summary:
        trainer.summary_collection.add_fetched_summary("x_summary", "scalar", "x")
    counter = iter(range(1, 1000))
    trainer.train_op = lambda: {"x": np.float32(next(counter))}
    return trainer


@pytest.mark.parametrize("fetching_first", [True, False])
def test_two_trainers_in_one_process_own_their_summary_hooks(fetching_first):
    """Whether MergeAllSummaries takes part in hooked runs is its own trainer's business: a trainer
    whose steps fetch no summary stays off the hooked-run protocol beside one whose steps do, in
    either order, and the other still writes its fetched summary."""
    made = [fetching_trainer(fetching_first), fetching_trainer(not fetching_first)]
    fetching, plain = made if fetching_first else made[::-1]
    fetching_rec, plain_rec = Recorder(), Recorder()
    merge_fetching, merge_plain = MergeAllSummaries(), MergeAllSummaries()
    plain.setup_callbacks([merge_plain], [plain_rec])
    fetching.setup_callbacks([merge_fetching], [fetching_rec])
    assert plain.callbacks.active("before_run") == [] and not plain.callbacks.hooks_runs
    assert fetching.callbacks.active("before_run") == [merge_fetching] and fetching.callbacks.hooks_runs
    for trainer in (plain, fetching):
        trainer.initialize()
        trainer.main_loop(steps_per_epoch=3, max_epoch=1)
    assert fetching_rec.steps_of("x_summary") == [3] and fetching_rec.values_of("x_summary") == [3.0]
    assert plain_rec.steps_of("x_summary") == []
