"""InferenceRunner with SimpleTrainer: its numbers, its inputs, several runners in one run, its errors."""
from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from trainstack.callbacks import PeriodicTrigger, ProcessTensors
from trainstack.inputs import FeedInput, InputError, QueueInput, StagingInput
from trainstack.towers import SimpleTrainer, VariableReuseError, get_current_tower_context
from trainstack.towers.predict.inference import ClassificationError, Inferencer, ScalarStats
from trainstack.towers.predict.inference_runner import InferenceRunner


@pytest.fixture
def wrong_model(classifier):
    """The shared TinyClassifier, also naming ``incorrect_vector`` (1.0 where misclassified), with
    dropout on its input in training towers only (the tower context says which)."""

    class WithWrongVector(classifier):
        def __init__(self):
            super().__init__()
            self.drop = keras.layers.Dropout(0.5)

        def build_graph(self, x, label):
            x = self.drop(x, training=get_current_tower_context().is_training)
            cost = super().build_graph(x, label)
            predicted = tf.argmax(self.fc(x), axis=1, output_type=tf.int32)
            tf.identity(tf.cast(tf.not_equal(predicted, label), tf.float32), name="incorrect_vector")
            return cost

    return WithWrongVector()


def manual_stats(model, batches):
    """Per-datapoint cross-entropy, correctness, with the model's current weights (NumPy)."""
    kernel, bias = (v.numpy() for v in model.fc.weights)
    x = np.concatenate([b[0] for b in batches]).astype(np.float64)
    label = np.concatenate([b[1] for b in batches])
    logits = x @ kernel + bias
    top = logits.max(axis=1, keepdims=True)
    logsumexp = np.log(np.exp(logits - top).sum(axis=1)) + top[:, 0]
    ce = logsumexp - logits[np.arange(len(label)), label]
    correct = logits.argmax(axis=1) == label
    return ce, correct


def uneven(make_df, seed):
    """Two batches of 16 and one of 5: per-batch means differ from the mean over datapoints."""
    return make_df(2, batch=16, seed=seed) + make_df(1, batch=5, seed=seed + 100)


def test_runner_numbers_equal_a_manual_computation(wrong_model, make_df, setup):
    val = uneven(make_df, seed=1)
    trainer = setup(SimpleTrainer(), wrong_model, make_df(6))
    runner = InferenceRunner(val, [ScalarStats(["cost", "accuracy"]),
                                   ClassificationError("incorrect_vector", "val_error")])
    assert runner.chief_only  # as in tensorpack
    trainer.train([runner], [], steps_per_epoch=6, max_epoch=2)

    history = trainer.monitors.get_history("validation_cost")
    assert len(history) == 2  # one pass at each epoch's trigger
    assert history[0] != pytest.approx(history[1])  # the model changed between them
    # weights of the last trigger (nothing trained after it), no dropout: equal only if the tower
    # was built with is_training=False
    ce, correct = manual_stats(wrong_model, val)
    monitors = trainer.monitors
    assert monitors.get_latest("validation_cost") == pytest.approx(ce.mean(), rel=1e-5)
    assert monitors.get_latest("validation_accuracy") == pytest.approx(correct.mean(), rel=1e-6)
    assert monitors.get_latest("val_error") == pytest.approx(1 - correct.mean(), abs=1e-9)
    # the inference tower ran in inference mode, on the trainer's variables
    assert ("InferenceTower", False) in wrong_model.contexts
    assert len(trainer.tower_func.variables) == 2  # kernel and bias, made by tower0 only


def test_two_runners_with_different_data_and_names(model, make_df, setup):
    val, test = uneven(make_df, seed=1), make_df(2, batch=8, seed=7)
    trainer = setup(SimpleTrainer(), model, make_df(4))
    val_runner = InferenceRunner(QueueInput(val), ScalarStats(["cost", "accuracy"]), tower_name="ValTower")
    test_runner = InferenceRunner(FeedInput(test), [ScalarStats("cost", prefix="test")],
                                  tower_name="TestTower", device=-1)
    weights = {}

    class Snapshot(Inferencer):  # records the weights each pass of the test runner saw
        def _get_fetches(self):
            return ["x"]  # an input, looked up by its name

        def _on_fetches(self, results):
            self.rows = getattr(self, "rows", 0) + len(results[0])

        def _after_inference(self):
            weights[self.trainer.epoch_num] = [v.numpy() for v in model.fc.weights]
            return {"test_rows": self.rows}

    test_runner.infs.append(Snapshot())
    trainer.train([val_runner, PeriodicTrigger(test_runner, every_k_epochs=2)], [],
                  steps_per_epoch=4, max_epoch=3)

    monitors = trainer.monitors
    assert len(monitors.get_history("validation_cost")) == 3
    assert len(monitors.get_history("test_cost")) == 1 and sorted(weights) == [2]
    assert monitors.get_history("test_rows") == [16]  # one pass of 2 x 8, not more
    ce_val, correct_val = manual_stats(model, val)
    assert monitors.get_latest("validation_cost") == pytest.approx(ce_val.mean(), rel=1e-5)
    assert monitors.get_latest("validation_accuracy") == pytest.approx(correct_val.mean())
    # the test pass ran at epoch 2, with the weights of then
    final = [v.numpy() for v in model.fc.weights]
    for v, w in zip(model.fc.weights, weights[2]):
        v.assign(w)
    ce_test, _ = manual_stats(model, test)
    assert monitors.get_latest("test_cost") == pytest.approx(ce_test.mean(), rel=1e-5)
    assert not np.allclose(final[0], weights[2][0])
    assert {("ValTower", False), ("TestTower", False)} <= set(model.contexts)
    assert trainer.tower_func.towers["TestTower"].get_tensor("cost").device.endswith("CPU:0")  # device=-1


INPUT_KINDS = {
    "dataflow": lambda batches: batches,  # read through a QueueInput
    "feed": FeedInput,
    "dataset": lambda batches: tf.data.Dataset.from_generator(
        lambda: iter(batches), output_signature=(tf.TensorSpec([None, 4], tf.float32),
                                                 tf.TensorSpec([None], tf.int32))
    ).apply(tf.data.experimental.assert_cardinality(len(batches))),
    "staging": lambda batches: StagingInput(QueueInput(batches)),
}


@pytest.mark.parametrize("kind", sorted(INPUT_KINDS))
def test_consecutive_passes_see_the_same_data_in_order(kind, model, make_df, setup):
    """Each trigger reads exactly one pass; with the weights frozen (lr 0) every pass agrees."""
    trainer = setup(SimpleTrainer(), model, make_df(3),
                    opt_fn=lambda: tf.keras.optimizers.SGD(0.0))
    batches = uneven(make_df, seed=3)
    seen = []

    class Labels(Inferencer):
        def _get_fetches(self):
            return ["label"]

        def _before_inference(self):
            self.labels = []

        def _on_fetches(self, results):
            self.labels.append(results[0].copy())

        def _after_inference(self):
            seen.append(np.concatenate(self.labels))

    runner = InferenceRunner(INPUT_KINDS[kind](batches), [ScalarStats("cost"), Labels()])
    trainer.train([PeriodicTrigger(runner, every_k_steps=1)], [], steps_per_epoch=3, max_epoch=1)
    costs = trainer.monitors.get_history("validation_cost")
    ce, _ = manual_stats(model, batches)
    assert costs == pytest.approx([ce.mean()] * 3, rel=1e-5)
    expected = np.concatenate([b[1] for b in batches])
    assert len(seen) == 3 and all(np.array_equal(s, expected) for s in seen)


def test_inference_records_no_summaries(model, make_df, setup):
    """The model's add_moving_summary(cost) runs in the inference tower too, but only the
    training tower's costs reach the trainer's moving average."""
    trainer = setup(SimpleTrainer(), model, make_df(4))
    flipped = [(x, 1 - label) for x, label in make_df(3, seed=5)]  # a much larger cost
    costs = []
    runner = PeriodicTrigger(InferenceRunner(flipped, ScalarStats("cost")), every_k_steps=1)
    trainer.train([ProcessTensors(["cost"], costs.append), runner], [], steps_per_epoch=4, max_epoch=2)
    ema, count = 0.0, 0
    for c in costs:  # add_moving_summary's zero-debiased EMA, decay 0.95
        ema, count = 0.95 * ema + 0.05 * float(c), count + 1
    expected = ema / (1 - 0.95 ** count)
    assert trainer.summary_collection.moving_average_values()["cost"] == pytest.approx(expected, rel=1e-5)
    # the validation costs differ from the training ones, so had the inference tower updated the
    # average, the equality above would not hold
    validation = trainer.monitors.get_history("validation_cost")
    assert abs(np.mean(validation) - np.mean([float(c) for c in costs])) > 1e-2


def test_inference_tower_must_not_create_variables(classifier, make_df, setup):
    class MakesVariableWhenInferring(classifier):
        def build_graph(self, x, label):
            cost = super().build_graph(x, label)
            if not self.contexts[-1][1]:
                tf.Variable(1.0, name="extra")
            return cost

    model = MakesVariableWhenInferring()
    trainer = setup(SimpleTrainer(), model, make_df(2))
    # (autograph re-raises the VariableReuseError as a StagingError with the same message)
    with pytest.raises(Exception, match="'InferenceTower' tried to create variable 'extra'") as info:
        trainer.train([InferenceRunner(make_df(2, seed=3), ScalarStats("cost"))], [],
                      steps_per_epoch=2, max_epoch=1)
    assert VariableReuseError.__name__ in str(info.value) or isinstance(info.value, VariableReuseError)


def test_clashing_tower_or_statistic_names_fail_at_setup(model, make_df, setup):
    trainer = setup(SimpleTrainer(), model, make_df(2))
    runners = [InferenceRunner(make_df(2, seed=1), ScalarStats("cost")),
               InferenceRunner(make_df(2, seed=2), ScalarStats("cost", prefix="test"))]
    with pytest.raises(ValueError, match="tower 'InferenceTower' is already used by "
                                         "InferenceRunner\\(InferenceTower\\).*tower_name"):
        trainer.train(runners, [], steps_per_epoch=2, max_epoch=1)

    trainer = setup(SimpleTrainer(), type(model)(), make_df(2))
    runners = [InferenceRunner(make_df(2, seed=1), ScalarStats("cost")),
               InferenceRunner(make_df(2, seed=2), ScalarStats("cost"), tower_name="Other")]
    with pytest.raises(ValueError, match="ScalarStats of InferenceRunner\\(Other\\): statistic "
                                         "'validation_cost' is already used by ScalarStats of "
                                         "InferenceRunner\\(InferenceTower\\).*prefix"):
        trainer.train(runners, [], steps_per_epoch=2, max_epoch=1)

    trainer = setup(SimpleTrainer(), type(model)(), make_df(2))
    one_runner = InferenceRunner(make_df(2, seed=1), [ScalarStats("cost"), ScalarStats(["accuracy", "cost"])])
    with pytest.raises(ValueError, match="statistic 'validation_cost' is already used"):
        trainer.train([one_runner], [], steps_per_epoch=2, max_epoch=1)


def test_undeclared_statistic_clash_fails_when_reported(model, make_df, setup):
    class Undeclared(Inferencer):
        def _get_fetches(self):
            return ["cost"]

        def _on_fetches(self, results):
            pass

        def _after_inference(self):
            return {"validation_cost": 0.0}

    trainer = setup(SimpleTrainer(), model, make_df(2))
    runners = [InferenceRunner(make_df(1, seed=1), ScalarStats("cost")),
               InferenceRunner(make_df(1, seed=2), Undeclared(), tower_name="Second")]
    with pytest.raises(ValueError, match="statistic 'validation_cost' is already used"):
        trainer.train(runners, [], steps_per_epoch=2, max_epoch=1)


def test_bad_arguments_and_inputs(model, make_df, setup):
    with pytest.raises(TypeError, match="an InputSource, a tf.data.Dataset or a dataflow"):
        InferenceRunner(np.zeros(3), ScalarStats("cost"))
    with pytest.raises(TypeError, match="not an Inferencer"):
        InferenceRunner(make_df(1), [ScalarStats("cost"), "accuracy"])
    with pytest.raises(TypeError, match="device"):
        InferenceRunner(make_df(1), ScalarStats("cost"), device=-2)

    class NoLen:
        def __iter__(self):
            return iter(make_df(1))

    trainer = setup(SimpleTrainer(), model, make_df(2))
    with pytest.raises(InputError, match="needs an input that knows its size"):
        trainer.train([InferenceRunner(NoLen(), ScalarStats("cost"))], [], steps_per_epoch=1, max_epoch=1)

    trainer = setup(SimpleTrainer(), type(model)(), make_df(2))
    with pytest.raises(KeyError, match="no tensor named 'nope'"):
        trainer.train([InferenceRunner(make_df(1), ScalarStats("nope"))], [], steps_per_epoch=1,
                      max_epoch=1)

    shared = FeedInput(make_df(1))
    trainer = setup(SimpleTrainer(), type(model)(), shared)
    with pytest.raises(InputError, match="already set up"):
        trainer.train([InferenceRunner(shared, ScalarStats("cost"))], [], steps_per_epoch=1, max_epoch=1)


def test_queue_input_failure_is_reported(model, make_df, setup):
    """Bad validation data: the runner's queue thread fails; the error names the input, not a hang."""
    bad = make_df(2, seed=1) + [(np.zeros((4, 3), np.float32), np.zeros(4, np.int32))]
    trainer = setup(SimpleTrainer(), model, make_df(2))
    with pytest.raises(InputError, match="InferenceRunner\\(InferenceTower\\): input QueueInput failed "
                                         "after 2 of its 3 batches: .*input 'x' expects"):
        trainer.train([InferenceRunner(bad, ScalarStats("cost"))], [], steps_per_epoch=2, max_epoch=1)


@pytest.mark.gpu
@pytest.mark.skipif(not tf.config.list_physical_devices("GPU"), reason="needs a GPU")
def test_runner_on_a_gpu(model, make_df, setup):
    val = make_df(3, seed=1)
    trainer = setup(SimpleTrainer(), model, make_df(2))
    trainer.train([InferenceRunner(val, ScalarStats("cost"), device=0)], [], steps_per_epoch=2, max_epoch=1)
    handle = trainer.tower_func.towers["InferenceTower"]
    assert handle.get_tensor("logits").device.endswith("GPU:0")
    ce, _ = manual_stats(model, val)
    assert trainer.monitors.get_latest("validation_cost") == pytest.approx(ce.mean(), rel=1e-4)
