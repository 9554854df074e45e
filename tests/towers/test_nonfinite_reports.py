"""Non-finite values (issue 27): the report names the first bad step and tensor, a skipped step
stays out of the moving averages, and a run stopped by NaN ends with NonFiniteError (a
non-zero exit status) after its checkpoints and stats are written, unless on_nonfinite="stop".

Each test trains as a user does: ``launch_train_with_config(TrainConfig(...), SimpleTrainer())``
on a list of batches, one of which is bad: full of inf (the loss is not finite), or all zeros,
which makes the gradient of the model's ``gate`` layer NaN while the loss stays finite (the
gradient of a norm at 0).
"""
from __future__ import annotations

import json
import logging
import math
import os
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest
import tensorflow as tf

from trainstack.callbacks import ModelSaver, TerminateOnNaN, add_moving_summary
from trainstack.loop import NonFiniteError
from trainstack.towers import ModelDesc, SimpleTrainer, TrainConfig, launch_train_with_config

STEPS, EPOCHS = 5, 4  # a run is one pass over EPOCHS * STEPS batches


class GatedClassifier(ModelDesc):
    """Logistic regression, plus 0.01 * |x[:, :3] + 0 * gate(x)|: the gradient of a norm at 0 is
    NaN, so a batch of zeros gives ``gate``'s variables a NaN gradient under a finite loss."""

    def __init__(self) -> None:
        self.fc = keras.layers.Dense(2, name="fc")
        self.gate = keras.layers.Dense(3, name="gate")

    def inputs(self):
        return [tf.TensorSpec([None, 4], tf.float32, "x"), tf.TensorSpec([None], tf.int32, "label")]

    def build_graph(self, x, label):
        xent = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=label, logits=self.fc(x))
        cost = tf.add(tf.reduce_mean(xent), 0.01 * tf.norm(self.gate(x) * 0.0 + x[:, :3]), name="cost")
        add_moving_summary(cost)
        return cost

    def optimizer(self):
        return keras.optimizers.SGD(0.1)


def batches(bad_step=None, fill=math.inf, n=EPOCHS * STEPS):
    """``n`` batches; the one of global step ``bad_step`` (1-based) filled with ``fill``."""
    rng = np.random.default_rng(0)
    out = []
    for step in range(1, n + 1):
        label = rng.integers(0, 2, size=8).astype("int32")
        x = (rng.normal(size=(8, 4)) + 2.0 * label[:, None]).astype("float32")
        out.append((np.full_like(x, fill) if step == bad_step else x, label))
    return out


def config(df, callbacks=(), **options):
    return TrainConfig(model=GatedClassifier(), dataflow=df, callbacks=list(callbacks),
                       steps_per_epoch=STEPS, max_epoch=EPOCHS, **options)


# -- 1. the report names the first bad step and the tensor ------------------------------------
def test_a_batch_of_inf_is_named_by_its_step_and_the_loss(logger_dir, caplog):
    df = batches(bad_step=8)  # epoch 2's third step; the saver refuses at epoch 2's end
    with caplog.at_level(logging.ERROR), pytest.raises(NonFiniteError) as info:
        launch_train_with_config(config(df, [ModelSaver()]), SimpleTrainer())
    error = info.value
    assert (error.step, error.tensor, error.stopped_at) == (8, "the loss 'cost'", 10)
    assert "The first non-finite value appeared at global step 8, in the loss 'cost'" in str(error)
    refusal = [r.getMessage() for r in caplog.records if "not saving global_step 10" in r.getMessage()]
    assert refusal and "global step 8, in the loss 'cost'" in refusal[0]
    assert "The last good checkpoint is " + os.path.join(logger_dir, "model-5") in refusal[0]


def test_a_nan_gradient_under_a_finite_loss_is_named_by_its_variable(logger_dir, caplog):
    # step 3's batch is all zeros: the loss is finite, the gradient of gate/kernel is NaN; the
    # NaN weights make step 4's loss NaN, which TerminateOnNaN sees
    df = batches(bad_step=3, fill=0.0)
    with caplog.at_level(logging.ERROR), pytest.raises(NonFiniteError) as info:
        launch_train_with_config(config(df, [TerminateOnNaN(["cost"])]), SimpleTrainer())
    assert (info.value.step, info.value.tensor) == (3, "the gradient of 'gate/kernel'")
    assert "'cost' is nan at global_step 4" in str(info.value)
    assert any("global step 3, in the gradient of 'gate/kernel'" in r.getMessage() for r in caplog.records)


def test_the_record_names_the_step_inside_a_multi_step_call(logger_dir):
    df = batches(bad_step=7)
    trainer = SimpleTrainer(steps_per_run=4)  # calls of 4, 1, 4, 1 steps: step 7 is in the 3rd
    with pytest.raises(NonFiniteError) as info:
        launch_train_with_config(config(df, [ModelSaver()]), trainer)
    assert (info.value.step, info.value.tensor) == (7, "the loss 'cost'")


def test_record_nonfinite_loss_records_only_the_loss(logger_dir):
    # without the gradients' check, the NaN gradient of step 3 is seen as step 4's loss
    trainer = SimpleTrainer(record_nonfinite="loss")
    with pytest.raises(NonFiniteError) as info:
        launch_train_with_config(config(batches(bad_step=3, fill=0.0), [TerminateOnNaN(["cost"])]),
                                 trainer)
    assert (info.value.step, info.value.tensor) == (4, "the loss 'cost'")


def test_record_nonfinite_takes_true_loss_or_false():
    with pytest.raises(ValueError, match=r"SimpleTrainer\(record_nonfinite=\.\.\.\) must be True or False, got "
                                         r"'gradients' \(True: the loss and the gradients; 'loss': the loss only"):
        SimpleTrainer(record_nonfinite="gradients")


# -- 2. skipped steps: named, and kept out of the moving averages ------------------------------
@pytest.mark.parametrize("fill, named", [(math.inf, "the loss 'cost'"),
                                         (0.0, "the gradient of 'gate/kernel'")])
def test_a_skipped_step_is_named_and_stays_out_of_the_moving_average(logger_dir, caplog, fill, named):
    trainer = SimpleTrainer(skip_nonfinite_steps=True)
    with caplog.at_level(logging.WARNING, logger="trainstack.towers"):
        launch_train_with_config(config(batches(bad_step=3, fill=fill)), trainer)
    assert f"global step 3: {named} was not finite" in caplog.text
    assert trainer.global_step == EPOCHS * STEPS  # training went on
    costs = trainer.monitors.get_history("cost")
    assert len(costs) == EPOCHS and all(math.isfinite(c) for c in costs), costs
    assert trainer.monitors.get_latest("skipped_steps") == 1


def test_the_averages_skip_exactly_the_skipped_step(logger_dir):
    """The average after a run with a skipped step equals the one of a run without that batch."""
    good = batches(n=STEPS)

    def average(df, **options):
        keras.utils.set_random_seed(0)
        trainer = SimpleTrainer(**options)
        launch_train_with_config(TrainConfig(model=GatedClassifier(), dataflow=df, steps_per_epoch=len(df),
                                             max_epoch=1), trainer)
        return trainer.monitors.get_latest("cost")

    with_bad = average(good[:2] + batches(bad_step=1, n=1) + good[2:], skip_nonfinite_steps=True)
    assert with_bad == pytest.approx(average(good), rel=1e-6)


# -- 3. how a run stopped by NaN ends ----------------------------------------------------------
def test_on_nonfinite_stop_ends_the_run_quietly(logger_dir):
    trainer = SimpleTrainer()
    launch_train_with_config(config(batches(bad_step=8), [ModelSaver()], on_nonfinite="stop"),
                             trainer)
    assert trainer.global_step == 10
    assert trainer.first_nonfinite() == (8, "the loss 'cost'")


def test_on_nonfinite_takes_raise_or_stop():
    with pytest.raises(ValueError, match="on_nonfinite"):
        config(batches(), on_nonfinite="ignore")


SCRIPT = textwrap.dedent("""
    import sys, numpy as np, keras, tensorflow as tf
    from trainstack.callbacks import *
    from trainstack.dataflow import *
    from trainstack.inputs import *
    from trainstack.loop import *
    from trainstack.towers import *

    class Model(ModelDesc):
        def __init__(self):
            self.fc = keras.layers.Dense(2)
        def inputs(self):
            return [tf.TensorSpec([None, 4], tf.float32, "x"), tf.TensorSpec([None], tf.int32, "label")]
        def build_graph(self, x, label):
            xent = tf.nn.sparse_softmax_cross_entropy_with_logits(label, self.fc(x))
            return tf.reduce_mean(xent, name="cost")
        def optimizer(self):
            return keras.optimizers.SGD(0.1)

    # 10 batches, epochs of 5 steps: the batch of global step 8 is inf
    data = [(np.full((8, 4), np.inf if i == 7 else 1.0, "float32"), np.zeros(8, "int32")) for i in range(10)]
    set_logger_dir(sys.argv[1])
    options = dict(on_nonfinite=sys.argv[2]) if len(sys.argv) > 2 else {}
    launch_train_with_config(TrainConfig(model=Model(), dataflow=data, callbacks=[ModelSaver()],
                                         steps_per_epoch=5, max_epoch=3, **options), SimpleTrainer())
""")


@pytest.mark.parametrize("options, failed", [([], True), (["stop"], False)])
def test_the_exit_status_of_a_script_stopped_by_nan(tmp_path, options, failed):
    # the batch of step 8 (the third of epoch 2) is inf: epoch 2's save is refused, training stops
    logdir = str(tmp_path / "train_log")
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    proc = subprocess.run([sys.executable, "-c", SCRIPT, logdir, *options], env=env, capture_output=True,
                          text=True, timeout=300)
    assert (proc.returncode != 0) == failed, proc.stderr[-3000:]
    assert ("NonFiniteError: ModelSaver: not saving global_step 10" in proc.stderr) == failed
    assert "The first non-finite value appeared at global step 8, in the loss 'cost'" in proc.stderr
    assert tf.train.latest_checkpoint(logdir).endswith("model-5")  # epoch 1's, the last good one
    with open(os.path.join(logdir, "stats.jsonl")) as f:
        assert [json.loads(line)["epoch_num"] for line in f] == [1, 2]  # epoch 2's written too


WORKERS_SCRIPT = textwrap.dedent("""
    import multiprocessing, sys, numpy as np
    sys.path.insert(0, {towers_tests!r})
    from conftest import TinyClassifier, make_dataflow
    from trainstack.callbacks import *
    from trainstack.dataflow import *
    from trainstack.inputs import *
    from trainstack.loop import *
    from trainstack.towers import *

    data = make_dataflow(10)  # NumPy batches: the workers import no TensorFlow
    data[3] = (np.full_like(data[3][0], np.inf), data[3][1])
    for kwargs in (dict(dataflow=MultiProcessDataFlow(data, 2)), dict(data=MultiProcessInput(data, 2))):
        config = TrainConfig(model=TinyClassifier(), callbacks=[TerminateOnNaN(["cost"])], extra_callbacks=[],
                             monitors=[], steps_per_epoch=10, max_epoch=3, **kwargs)
        try:
            launch_train_with_config(config, SimpleTrainer())
        except NonFiniteError as e:
            print("STOPPED", e.tensor, "CHILDREN", len(multiprocessing.active_children()), flush=True)
""")


def test_input_workers_are_stopped_when_a_run_ends_with_nonfinite_error():
    code = WORKERS_SCRIPT.format(towers_tests=os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [line for line in proc.stdout.splitlines() if line.startswith("STOPPED")]
    assert lines == ["STOPPED the loss 'cost' CHILDREN 0"] * 2, proc.stdout[-3000:]
