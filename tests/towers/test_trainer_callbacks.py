"""The callbacks layer's defaults, savers and setters with SimpleTrainer; checkpoint round trips."""
from __future__ import annotations

import io
import json
import os

import numpy as np
import pytest
import tensorflow as tf

from trainstack.callbacks import (
    JSONWriter,
    MergeAllSummaries,
    ModelSaver,
    MovingAverageSummary,
    ProgressBar,
    RunUpdateOps,
    ScalarPrinter,
    ScheduledHyperParamSetter,
    TFEventWriter,
    load_loop_state,
)
from trainstack.loop import Callback
from trainstack.towers import (
    GlobalNormClip,
    SimpleTrainer,
    SummaryGradient,
    TowerContext,
    TowerFunc,
    apply_grad_processors,
)


class RecordKernel(Callback):
    """The model's kernel after each step."""

    def __init__(self, model):
        self.model = model
        self.kernels = []

    def _trigger_step(self):
        self.kernels.append(self.model.fc.kernel.numpy().copy())


def test_defaults_savers_and_setters_work_with_simple_trainer(model, dataflow, setup, logger_dir):
    trainer = setup(SimpleTrainer(), model, dataflow)
    assert [type(c) for c in trainer.default_extra_callbacks()][:2] == [MovingAverageSummary, ProgressBar]
    assert {type(c) for c in trainer.default_extra_callbacks()} >= {MergeAllSummaries().__class__,
                                                                     RunUpdateOps}
    assert [type(m) for m in trainer.default_monitors()] == [TFEventWriter, JSONWriter, ScalarPrinter]
    record = RecordKernel(model)
    bar_output = io.StringIO()
    trainer.train_with_defaults(
        callbacks=[ModelSaver(), ScheduledHyperParamSetter("learning_rate", [(0, 0.5), (1, 0.0)]),
                   ProgressBar(["cost"], file=bar_output), record],
        max_epoch=2)  # steps_per_epoch: the dataflow's size
    assert trainer.steps_per_epoch == len(dataflow) == 10
    # the setter reached the optimizer's learning rate variable, which the traced step reads:
    # epoch 1 trains, epoch 2 (learning rate 0) changes nothing
    assert float(trainer.optimizer.learning_rate.numpy()) == 0.0
    assert not np.allclose(record.kernels[0], record.kernels[9])
    for k in record.kernels[10:]:
        np.testing.assert_array_equal(k, record.kernels[10])
    # MovingAverageSummary reported the add_moving_summary(cost) of build_graph
    with open(os.path.join(logger_dir, "stats.jsonl")) as f:
        stats = [json.loads(line) for line in f]
    assert [s["epoch_num"] for s in stats if "cost" in s] == [1, 2]
    assert all(np.isfinite(s["cost"]) for s in stats if "cost" in s)
    assert "cost" in bar_output.getvalue()
    # ModelSaver wrote the final model with the loop state
    latest = tf.train.latest_checkpoint(logger_dir)
    assert latest.endswith("model-20")
    assert load_loop_state(latest)["global_step"] == 20


def test_a_checkpoint_restores_into_a_new_trainer(classifier, dataflow, setup, tmp_path):
    first = classifier()
    trainer = setup(SimpleTrainer(), first, dataflow)
    trainer.train([ModelSaver(checkpoint_dir=str(tmp_path))], [], steps_per_epoch=5, max_epoch=1)
    path = tf.train.latest_checkpoint(str(tmp_path))

    second = classifier()  # Keras names its layer dense_<n+1>: keys must not depend on it
    assert second.fc.name != first.fc.name
    other = setup(SimpleTrainer(), second, dataflow)
    assert not np.allclose(second.fc.kernel.numpy(), first.fc.kernel.numpy())
    status = tf.train.Checkpoint(**other.checkpoint_objects).restore(path)
    status.expect_partial().assert_existing_objects_matched()
    np.testing.assert_array_equal(second.fc.kernel.numpy(), first.fc.kernel.numpy())
    np.testing.assert_array_equal(second.fc.bias.numpy(), first.fc.bias.numpy())
    assert int(other.optimizer.iterations.numpy()) == 5

    # an inference-only tower function (no trainer, no optimizer) restores the model part
    third = classifier(moving_summary=False)
    tower_func = TowerFunc(third.build_graph, third.get_input_signature())
    with TowerContext("predict", is_training=False):
        tower_func(tf.zeros([1, 4]), tf.zeros([1], tf.int32))
    tf.train.Checkpoint(model=tower_func.checkpoint_module).restore(path).expect_partial()
    np.testing.assert_array_equal(third.fc.kernel.numpy(), first.fc.kernel.numpy())


def test_checkpoint_objects_name_the_model_and_the_unwrapped_optimizer(model, dataflow, setup):
    opt = apply_grad_processors(model.get_optimizer(), [GlobalNormClip(1.0)])
    trainer = setup(SimpleTrainer(), model, dataflow, opt_fn=lambda: opt)
    objects = trainer.checkpoint_objects
    assert set(objects) == {"model", "optimizer"}
    assert objects["optimizer"] is opt.optimizer is trainer.optimizer
    names = {v.name for v in objects["model"].variables}
    assert names == {w.value.name for w in model.fc.weights}


def test_summary_gradient_reports_through_the_trainer_collection(model, dataflow, setup):
    opt = apply_grad_processors(model.get_optimizer(), [SummaryGradient()])
    trainer = setup(SimpleTrainer(), model, dataflow, opt_fn=lambda: opt)
    trainer.train([MovingAverageSummary(), MergeAllSummaries()], [], steps_per_epoch=3, max_epoch=1)
    assert "grad_global_norm" in trainer.summary_collection.moving_average_names
    kernel = model.fc.kernel.path
    assert f"{kernel}-grad-rms" in trainer.summary_collection.summary_names
    assert f"{kernel}-grad-histogram" in trainer.summary_collection.summary_names
    assert trainer.monitors.get_latest("grad_global_norm") > 0
    assert trainer.monitors.get_latest(f"{kernel}-grad-rms") > 0


def test_initialize_without_session_init_keeps_the_variables(model, dataflow, setup):
    trainer = setup(SimpleTrainer(), model, dataflow)
    before = model.fc.kernel.numpy().copy()
    trainer.setup_callbacks([], [])
    trainer.initialize(session_init=None)
    np.testing.assert_array_equal(before, model.fc.kernel.numpy())
    with pytest.raises(RuntimeError, match="already called"):
        trainer.initialize()
