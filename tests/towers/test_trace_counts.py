"""How many times the model is traced: once per set of fetches of the training step (the
first trace creates the variables), once per inference tower, never again while it trains; a
trainer that places its variables on several devices traces them first, apart. Counted by the
tower function's Python calls (``TinyClassifier.contexts``), which do not depend on the
machine's speed."""
from __future__ import annotations

import logging

import numpy as np
import pytest
import tensorflow as tf
from conftest import TinyClassifier, make_dataflow

from trainstack.callbacks import ProcessTensors
from trainstack.inputs import FeedInput, QueueInput, TFDatasetInput
from trainstack.towers import (
    InferenceRunner,
    ScalarStats,
    SimpleTrainer,
    SyncMultiGPUTrainerReplicated,
    TowerFunc,
    TrainConfig,
    launch_train_with_config,
)


def _dataset(batches: list) -> tf.data.Dataset:
    x, y = (np.concatenate(part) for part in zip(*batches))
    return tf.data.Dataset.from_tensor_slices((x, y)).batch(16).repeat()


def _train(model, callbacks=(), trainer=None, **data) -> SimpleTrainer:
    trainer = trainer or SimpleTrainer()
    launch_train_with_config(TrainConfig(model=model, callbacks=list(callbacks), extra_callbacks=[],
                                         monitors=[], steps_per_epoch=5, max_epoch=2, **data), trainer)
    return trainer


@pytest.mark.parametrize("data", ["dataflow", "feed", "queue", "dataset"])
def test_the_model_is_traced_once_in_all_by_the_step_that_creates_its_variables(data):
    model = TinyClassifier()
    source = {"dataflow": lambda: {"dataflow": make_dataflow()},
              "feed": lambda: {"data": FeedInput(make_dataflow())},
              "queue": lambda: {"data": QueueInput(make_dataflow())},
              "dataset": lambda: {"data": TFDatasetInput(_dataset(make_dataflow()))}}[data]()
    trainer = _train(model, **source)
    assert model.contexts == [("tower0", True)]
    assert trainer.train_op.trace_counts == {(): 1}
    assert trainer.global_step == 10
    # the variables it made are the ones trained (eager ones, not the trace's), with the optimizer's slots
    assert [v.shape for v in trainer.trainable_variables] == [(4, 2), (2,)]
    assert all(tf.reduce_all(v == w.value) for v, w in zip(trainer.trainable_variables, [model.fc.kernel, model.fc.bias]))
    assert int(trainer._optimizer.iterations) == 10


def test_a_callback_fetching_tensors_adds_one_trace_of_its_variant():
    model, costs = TinyClassifier(), []
    trainer = _train(model, [ProcessTensors(["cost"], costs.append)], dataflow=make_dataflow())
    assert trainer.train_op.trace_counts == {(): 1, ("cost",): 1}
    assert model.contexts == [("tower0", True)] * 2
    assert len(costs) == 10 and costs[-1] < costs[0]


def test_each_inference_tower_is_traced_once():
    model = TinyClassifier()
    trainer = _train(model, [InferenceRunner(make_dataflow(3), [ScalarStats("cost")])], dataflow=make_dataflow())
    inference = [c for c in model.contexts if not c[1]]
    assert inference == [("InferenceTower", False)]
    assert trainer.monitors.get_latest("validation_cost") < 0.7
    predict = trainer.get_predictor(["x"], ["logits"])
    predict(make_dataflow(1)[0][0])
    predict(make_dataflow(1)[0][0])
    assert len([c for c in model.contexts if not c[1]]) == 2   # the predictor's tower, once


def replicated_trace_counts(devices: list[str]) -> tuple[dict, list]:
    """In the worker with several devices: a replicated trainer's step trace counts and the
    towers its model built."""
    model = TinyClassifier()
    trainer = _train(model, trainer=SyncMultiGPUTrainerReplicated(devices[:2]), dataflow=make_dataflow())
    return trainer.train_op.trace_counts, [name for name, _ in model.contexts]


def test_replicated_towers_are_each_traced_once_per_step_variant(cpus):
    import test_trace_counts  # noqa: PLC0415  # by module name, so the worker can import the case

    counts, towers = cpus.run(test_trace_counts.replicated_trace_counts)
    assert counts == {(): 1}
    # twice for the variables (under a strategy, tf.function traces the creating trace again:
    # see trainstack.towers.tower.variable_creation), then each tower once in the step
    assert towers == ["tower0", "tower0", "tower0", "tower1"]


class Branching(TinyClassifier):
    """A tower function with Python control flow on a tensor, which AutoGraph converts."""

    autograph = True

    def build_graph(self, x, label):
        cost = super().build_graph(x, label)
        if tf.reduce_mean(x) > 1000.0:   # never true for this data: a tf.cond, not a Python bool
            cost = cost * 0.0
        return tf.identity(cost, name="branched_cost")


def test_a_model_that_asks_for_autograph_is_converted():
    """Unconverted, ``if <tensor>:`` in a graph raises; converted, it is a tf.cond that keeps the cost."""
    model, costs = Branching(), []
    trainer = _train(model, [ProcessTensors(["branched_cost"], costs.append)], dataflow=make_dataflow())
    assert trainer.train_op.trace_counts == {(): 1, ("branched_cost",): 1}
    assert len(costs) == 10 and 0 < costs[-1] < costs[0]


class UnconvertedBranching(Branching):
    autograph = False


def test_control_flow_on_a_tensor_without_autograph_names_the_switch():
    """AutoGraph is off by default (as in Keras' fit): the error says how to turn it on."""
    with pytest.raises(tf.errors.OperatorNotAllowedInGraphError,
                       match=r"tower function Branching.build_graph uses a tensor as a Python bool.*`autograph = True` on the "
                             r"ModelDesc"):
        _train(UnconvertedBranching(), dataflow=make_dataflow())


def test_autograph_is_off_by_default_and_converts_nothing(monkeypatch):
    """The plain model is traced as written: AutoGraph's converter is never called."""
    calls, to_graph = [], tf.autograph.to_graph
    monkeypatch.setattr(tf.autograph, "to_graph", lambda fn, *a, **k: calls.append(fn) or to_graph(fn, *a, **k))
    assert TinyClassifier.autograph is False
    trainer = _train(TinyClassifier(), dataflow=make_dataflow())
    assert trainer.global_step == 10 and calls == []


    class Converted(Branching):  # a function of its own: conversions are cached per function
        def build_graph(self, x, label):
            return super().build_graph(x, label)

    _train(Converted(), dataflow=make_dataflow())
    assert [c.__qualname__ for c in calls] == [Converted.build_graph.__qualname__]


class ComputedVariable(TinyClassifier):
    """Creates a variable from a tensor it computes (allowed on a tower function's first call)."""

    def build_graph(self, x, label):
        if not hasattr(self, "offset"):
            self.offset = tf.Variable(tf.random.normal([2]), name="offset")  # not a constant
        return super().build_graph(x, label) + 0.0 * tf.reduce_sum(self.offset)


def test_a_variable_made_from_a_computed_tensor_still_works():
    model = ComputedVariable()
    trainer = _train(model, dataflow=make_dataflow())
    # TensorFlow lifts the computed initial value out of the step's first trace, and traces the
    # step again without creating it (tf.function's rule for a variable made on a first call)
    assert trainer.global_step == 10 and trainer.train_op.trace_counts == {(): 2}
    assert model.offset.shape == (2,) and model.fc.kernel.shape == (4, 2)
    assert len(model.contexts) == 2


def test_a_tower_function_without_source_is_traced_as_written(caplog):
    namespace: dict = {}
    exec("def build_graph(self, x, label):\n    return TinyClassifier.build_graph(self, x, label)\n",
         {"TinyClassifier": TinyClassifier}, namespace)
    Exec = type("Exec", (TinyClassifier,), {"build_graph": namespace["build_graph"], "autograph": True})
    with caplog.at_level(logging.WARNING, logger="trainstack.towers"):
        trainer = _train(Exec(), dataflow=make_dataflow())
    assert trainer.global_step == 10
    warned = [r.getMessage() for r in caplog.records if "AutoGraph could not convert" in r.getMessage()]
    assert len(warned) == 1


def test_a_tower_func_wrapped_again_keeps_its_autograph_setting_unless_given_one():
    signature = [tf.TensorSpec([None, 4], tf.float32, "x")]
    converted = TowerFunc(lambda x: x, signature, autograph=True)
    assert TowerFunc(converted, signature).autograph is True
    assert TowerFunc(converted, signature, autograph=False).autograph is False
    assert TowerFunc(TowerFunc(lambda x: x, signature), signature).autograph is False
