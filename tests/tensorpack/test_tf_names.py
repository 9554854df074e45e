"""tensorpack 0.11's TF names that trainstack.tensorpack writes itself, against tensorpack's documented
behaviour (its source's formulas): optimizer wrappers measured on the weights step by step, gradient
processors, symbolic functions, name scopes, checkpoints as dicts, the step value, and two callbacks."""
from __future__ import annotations

import logging
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from trainstack.loop import Callback, Trainer
from trainstack.tensorpack.callbacks import MergeAllSummaries, StartProcOrThread, TensorPrinter
from trainstack.tensorpack.compat import tfv1
from trainstack.tensorpack.tfutils import get_current_tower_context, get_global_step_value
from trainstack.tensorpack.tfutils.gradproc import CheckGradient, SummaryGradient
from trainstack.tensorpack.tfutils.model_utils import describe_trainable_vars, get_shape_str
from trainstack.tensorpack.tfutils.optimizer import (
    AccumGradOptimizer,
    PostProcessOptimizer,
    VariableAssignmentOptimizer,
    apply_grad_processors,
)
from trainstack.tensorpack.tfutils.scope_utils import cached_name_scope, under_name_scope
from trainstack.tensorpack.tfutils.summary import add_activation_summary
from trainstack.tensorpack.tfutils.symbolic_functions import print_stat, rms
from trainstack.tensorpack.tfutils.tower import BaseTowerContext, TowerFuncWrapper, TowerTensorHandle
from trainstack.tensorpack.tfutils.varmanip import (
    get_all_checkpoints,
    get_checkpoint_path,
    load_chkpt_vars,
    save_chkpt_vars,
)
from trainstack.tensorpack.train import ModelDesc, SimpleTrainer, TrainConfig, launch_train_with_config
from trainstack.tensorpack.utils.concurrency import LoopThread

LR = 0.1


class Linear(ModelDesc):
    """cost = mean over the batch of ``x . w`` (``w`` a TF1 variable starting at ones): its gradient is
    the batch's mean ``x``, so each step's update is known."""

    def __init__(self, make_opt, body=None):
        self.make_opt, self.body, self.contexts = make_opt, body, []

    def inputs(self):
        return [tf.TensorSpec([None, 2], tf.float32, "x")]

    def build_graph(self, x):
        self.contexts.append(get_current_tower_context())
        w = tfv1.get_variable("w", [2], initializer=tfv1.ones_initializer())
        cost = tf.reduce_mean(tf.reduce_sum(x * w, axis=1), name="cost")
        if self.body is not None:
            self.body(x, w)
        return cost

    def optimizer(self):
        return self.make_opt()


class Weights(Callback):
    """Records ``w`` after every step."""

    def __init__(self):
        self.values = []

    def _trigger_step(self):
        (w,) = [v for v in self.trainer.tower_func.variables if v.name == "w:0"]
        self.values.append(w.numpy().copy())


def batches(n, seed=0):
    rng = np.random.RandomState(seed)
    return [(rng.randn(4, 2).astype("float32"),) for _ in range(n)]


def train(model, df, *callbacks, extra=()):
    trainer = SimpleTrainer()
    launch_train_with_config(TrainConfig(dataflow=df, model=model, callbacks=list(callbacks),
                                         extra_callbacks=list(extra), monitors=[], max_epoch=1), trainer)
    return trainer


@pytest.mark.parametrize("make_sgd", [lambda: tfv1.train.GradientDescentOptimizer(LR),
                                      lambda: __import__("keras").optimizers.SGD(LR)], ids=["tf1", "keras"])
def test_accum_grad_optimizer_applies_the_sum_of_niter_gradients_every_niter_steps(make_sgd):
    """tensorpack's AccumGradOptimizer adds each step's gradient to a slot and, at every niter-th step,
    applies the slots (their sum) with the inner optimizer, then clears them."""
    df = batches(7)
    weights = Weights()
    train(Linear(lambda: AccumGradOptimizer(make_sgd(), 3)), df, weights)
    grads = [x.mean(axis=0) for (x,) in df]
    expected, w = [], np.ones(2)
    for step in range(1, 8):
        if step % 3 == 0:
            w = w - LR * np.sum(grads[step - 3:step], axis=0)
        expected.append(w)
    np.testing.assert_allclose(np.array(weights.values), np.array(expected), rtol=1e-5)
    assert not np.allclose(weights.values[2], weights.values[1])  # it did move, at step 3


def test_accum_grad_optimizer_with_niter_1_is_the_optimizer_and_checks_its_arguments():
    df = batches(3)
    weights = Weights()
    train(Linear(lambda: AccumGradOptimizer(tfv1.train.GradientDescentOptimizer(LR), 1)), df, weights)
    np.testing.assert_allclose(weights.values[-1], 1 - LR * sum(x.mean(axis=0) for (x,) in df), rtol=1e-5)
    with pytest.raises(ValueError, match="niter"):
        AccumGradOptimizer(tfv1.train.GradientDescentOptimizer(LR), 0)


def test_post_process_and_variable_assignment_optimizers_run_after_each_update():
    clip = lambda v: v.assign(tf.clip_by_value(v, 0.9, 2.0))  # noqa: E731
    df = [(np.full((4, 2), 3.0, "float32"),)] * 3  # each update is -0.3
    for make in (lambda: PostProcessOptimizer(tfv1.train.GradientDescentOptimizer(LR), clip),
                 lambda: VariableAssignmentOptimizer(tfv1.train.GradientDescentOptimizer(LR),
                                                     lambda v: tf.clip_by_value(v, 0.9, 2.0))):
        weights = Weights()
        train(Linear(make), df, weights)
        np.testing.assert_allclose(np.array(weights.values), 0.9, rtol=1e-6)  # 1 - 0.3 clipped, each step
    unclipped = Weights()
    train(Linear(lambda: tfv1.train.GradientDescentOptimizer(LR)), df, unclipped)
    np.testing.assert_allclose(unclipped.values[-1], 1 - 3 * 0.3, rtol=1e-5)


def test_check_gradient_stops_at_a_non_finite_gradient_naming_the_variable():
    df = [(np.ones((4, 2), "float32"),), (np.full((4, 2), np.nan, "float32"),)]
    with pytest.raises(tf.errors.InvalidArgumentError, match="CheckGradient/w"):
        train(Linear(lambda: apply_grad_processors(tfv1.train.GradientDescentOptimizer(LR), [CheckGradient()])), df)


def test_rms_and_print_stat(capfd):
    x = tf.constant([[3.0, -4.0], [0.0, 0.0]])
    assert float(rms(x)) == pytest.approx(np.sqrt(25 / 4))

    @tf.function
    def f(t):
        return print_stat(t, message="the x")

    np.testing.assert_array_equal(f(x).numpy(), x.numpy())
    err = capfd.readouterr().err
    assert "the x" in err and "2.5" in err and "-0.25" in err  # rms and mean


def test_name_scopes():
    @under_name_scope()
    def block(t):
        return tf.identity(t, name="out")

    @under_name_scope("given")
    def other(t):
        return tf.identity(t, name="out")

    names = {}

    @tf.function
    def f(t):
        names["a"] = block(t).name
        names["b"] = block(t).name
        names["c"] = other(t).name
        names["d"] = block(t, name_scope="chosen").name
        with cached_name_scope("summaries") as ns:
            names["ns"] = ns
            names["e"] = tf.identity(t, name="first").name
        with cached_name_scope("summaries"):
            names["f"] = tf.identity(t, name="second").name
        return t

    f(tf.constant(1.0))
    assert names == {"a": "block/out:0", "b": "block_1/out:0", "c": "given/out:0", "d": "chosen/out:0",
                     "ns": "summaries/", "e": "summaries/first:0", "f": "summaries/second:0"}


def test_checkpoints_as_dicts(tmp_path):
    values = {"conv0/W": np.arange(6, dtype="float32").reshape(2, 3), "fc/b:0": np.array([1.5, -2.0])}
    prefix = str(tmp_path / "model-20")
    save_chkpt_vars(values, prefix)
    save_chkpt_vars({"x": np.zeros(1, "float32")}, str(tmp_path / "model-5"))
    loaded = load_chkpt_vars(prefix)
    assert sorted(loaded) == ["conv0/W", "fc/b"]
    np.testing.assert_array_equal(loaded["conv0/W"], values["conv0/W"])
    np.testing.assert_array_equal(loaded["fc/b"], values["fc/b:0"])
    assert get_checkpoint_path(prefix + ".index") == prefix
    assert get_checkpoint_path(prefix + ".data-00000-of-00001") == prefix
    assert get_checkpoint_path(str(tmp_path / "checkpoint")) == str(tmp_path / "model-5")  # the latest saved
    assert [step for _, step in get_all_checkpoints(str(tmp_path))] == [5, 20]
    with pytest.raises(AssertionError):
        get_checkpoint_path(str(tmp_path / "model-7"))
    save_chkpt_vars(values, str(tmp_path / "w.npz"))
    assert sorted(load_chkpt_vars(str(tmp_path / "w.npz"))) == ["conv0/W", "fc/b"]
    # a tf.train.Checkpoint reads by its object paths, like TensorFlow's own reader
    tf.train.Checkpoint(v=tf.Variable([1.0, 2.0])).write(str(tmp_path / "obj"))
    assert any(k.startswith("v/") for k in load_chkpt_vars(str(tmp_path / "obj")))


def test_the_step_value_the_tower_names_and_describe(caplog):
    model = Linear(lambda: tfv1.train.GradientDescentOptimizer(LR))
    trainer = train(model, batches(3))
    assert get_global_step_value() == trainer.global_step == 3
    assert all(isinstance(ctx, BaseTowerContext) for ctx in model.contexts)
    assert TowerFuncWrapper is type(trainer.tower_func) or isinstance(trainer.tower_func, TowerFuncWrapper)
    assert isinstance(trainer.tower_func.towers["tower0"], TowerTensorHandle) if hasattr(
        trainer.tower_func.towers, "__getitem__") else True
    assert get_shape_str([tf.zeros([2, 3]), tf.TensorSpec([None, 4])]) == "[2, 3], [?, 4]"
    with caplog.at_level("INFO"):
        describe_trainable_vars(trainer.tower_func.variables)
    assert "w" in caplog.text and "Number of parameters (elements): 2" in caplog.text


def test_add_activation_summary_reports_under_its_scope():
    def body(x, w):
        add_activation_summary(tf.nn.relu(x * w, name="act"), types=["rms", "sparsity"], name="act")
        add_activation_summary(tf.reduce_sum(x), name="scalar")  # warned and skipped, as tensorpack's

    trainer = SimpleTrainer()
    launch_train_with_config(TrainConfig(dataflow=batches(2), model=Linear(
        lambda: tfv1.train.GradientDescentOptimizer(LR), body), extra_callbacks=[MergeAllSummaries()], max_epoch=1),
        trainer)
    names = trainer.monitors.scalar_names()
    assert {"activation-summary/act-rms", "activation-summary/act-sparsity"} <= set(names)
    assert not any("scalar" in n for n in names)


def test_tensor_printer_logs_the_named_tensors_each_step(monkeypatch):
    from trainstack.callbacks import logger

    lines = []
    monkeypatch.setattr(logger, "info", lambda msg: lines.append(msg), raising=False)
    df = batches(2)
    train(Linear(lambda: tfv1.train.GradientDescentOptimizer(LR)), df, TensorPrinter(["cost:0"]))
    printed = [line for line in lines if line.startswith("cost: ")]
    assert len(printed) == 2
    assert float(printed[0].split(": ")[1]) == pytest.approx(float(df[0][0].sum(axis=1).mean()), rel=1e-5)


def test_start_proc_or_thread_starts_before_and_stops_after_training():
    calls = []
    thread = LoopThread(lambda: calls.append(1) or __import__("time").sleep(0.001))
    seen = []
    trainer = Trainer()
    trainer.train_op = lambda: seen.append(thread.is_alive()) or {}
    trainer.train([StartProcOrThread(thread)], [], steps_per_epoch=3, max_epoch=1)
    assert seen == [True, True, True]
    thread.join(5)
    assert thread.stopped() and not thread.is_alive() and calls


class PutScalars(Callback):
    """Puts ``val_error`` (the epoch number / 10) and ``other`` after each epoch, as an inferencer would."""

    def _trigger_epoch(self):
        self.trainer.monitors.put_scalar("val_error", self.epoch_num / 10)
        self.trainer.monitors.put_scalar("other", 7)


def test_send_stat_and_send_monitor_data_run_the_formatted_command(tmp_path, monkeypatch):
    from trainstack.tensorpack.callbacks import InjectShell, SendMonitorData, SendStat

    out = tmp_path / "sent.txt"
    monitor = SendMonitorData(f"echo monitor {{val_error}} {{other}} >> {out}", ["val_error", "other"])
    trainer = Trainer()
    trainer.train_op = lambda: {}
    errors = []
    from trainstack.callbacks import logger

    monkeypatch.setattr(logger, "error", lambda msg: errors.append(msg), raising=False)
    trainer.train([PutScalars(), SendStat(f"echo stat {{val_error}} >> {out}", "val_error"),
                   SendStat("exit 3", "other")], [monitor], steps_per_epoch=2, max_epoch=2)
    lines = out.read_text().splitlines()
    assert [line for line in lines if line.startswith("stat")] == ["stat 0.1", "stat 0.2"]
    assert [line for line in lines if line.startswith("monitor")] == ["monitor 0.1 7", "monitor 0.2 7"]
    assert len(errors) == 2 and errors[0].startswith("Command exit 3 failed with ret=")

    pause = tmp_path / "pause.tmp"
    shells = []
    monkeypatch.setattr("pdb.set_trace", lambda: shells.append(True))
    inject = InjectShell(str(pause), shell="pdb")
    trainer = Trainer()
    trainer.train_op = lambda: {}

    class TouchAfterFirstEpoch(Callback):
        def _trigger_epoch(self):
            if self.epoch_num == 1:
                pause.write_text("")

    trainer.train([TouchAfterFirstEpoch(), inject], [], steps_per_epoch=1, max_epoch=3)
    assert shells == [True, True, True] and not pause.exists()  # epochs 1 (after the touch) to 3; removed at the end
    with pytest.raises(ValueError, match="'ipython' or 'pdb'"):
        InjectShell(shell="bash")


def test_a_variables_tf1_name_is_a_tensor_name_of_the_tower():
    """In TF1 the variable ``fc/W`` was the tensor ``fc/W:0`` (its read ``fc/W/read:0``): CAM-resnet.py asks its
    predictor for ``'linearnew/W'`` beside the feature maps. A tower's handle resolves such a name to the
    variable's value, read in the same call; a name of neither a tensor nor a variable stays the core's error."""
    from trainstack.tensorpack import FullyConnected, OfflinePredictor, PredictConfig
    from trainstack.tensorpack import ModelDesc as TPModelDesc

    class Small(TPModelDesc):
        def inputs(self):
            return [tfv1.TensorSpec([None, 3], tfv1.float32, "x")]

        def build_graph(self, x):
            return tfv1.reduce_mean(FullyConnected("fc", x, 2), name="cost")

    model = Small()
    pred = OfflinePredictor(PredictConfig(model=model, input_names=["x"],
                                          output_names=["fc/output", "fc/W", "fc/W:0", "fc/b/read"]))
    x = np.arange(6, dtype="float32").reshape(2, 3)
    out, kernel, same, bias = pred(x)
    variables = {v.name: v for v in pred.tower_func.variables}
    variables["fc/b:0"].assign([1.0, -1.0])   # read in each call: the values now
    out, kernel, same, bias = pred(x)
    np.testing.assert_array_equal(kernel, variables["fc/W:0"].numpy())
    np.testing.assert_array_equal(same, kernel)
    np.testing.assert_array_equal(bias, [1.0, -1.0])
    np.testing.assert_allclose(out, x @ kernel + bias, rtol=1e-6)
    with pytest.raises(KeyError, match="no tensor named 'fc/V' in tower"):
        OfflinePredictor(PredictConfig(model=model, input_names=["x"], output_names=["fc/V"]))


TENSORPACKS_TAGS = """
import tensorflow as tf
tf.compat.v1.disable_eager_execution()
from tensorpack.tfutils.gradproc import SummaryGradient
from tensorpack.tfutils.optimizer import apply_grad_processors
with tf.Graph().as_default():
    w = tf.compat.v1.get_variable("w", [2], initializer=tf.compat.v1.ones_initializer())
    cost = tf.reduce_sum(tf.constant([3.0, -4.0]) * w)
    opt = apply_grad_processors(tf.compat.v1.train.GradientDescentOptimizer(0.1), [SummaryGradient()])
    opt.apply_gradients(opt.compute_gradients(cost))
    for s in tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.SUMMARIES):
        print("SUMMARY", s.op.type, s.op.name)
"""


def test_summary_gradient_writes_tensorpacks_tags(caplog):
    """tensorpack 0.11's own SummaryGradient, built in a TF1 graph in another process, tags the histogram
    ``SummaryGradient/w-grad`` and the RMS's moving average ``SummaryGradient/w/rms`` (its monitors strip the
    scalar's ``-summary``); this one records those names, with the RMS of the gradient."""
    done = subprocess.run([sys.executable, "-c", TENSORPACKS_TAGS], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert done.returncode == 0, done.stderr[-3000:]
    theirs = sorted(line.split()[1:] for line in done.stdout.splitlines() if line.startswith("SUMMARY "))
    assert theirs == [["HistogramSummary", "SummaryGradient/w-grad"], ["ScalarSummary", "SummaryGradient/w/rms-summary"]]

    df = [(np.array([[3.0, -4.0]] * 4, "float32"),)] * 3  # each step's gradient is (3, -4): RMS sqrt(12.5)
    opt = lambda: apply_grad_processors(tfv1.train.GradientDescentOptimizer(LR), [SummaryGradient()])  # noqa: E731
    collection = train(Linear(opt), df).summary_collection
    assert "SummaryGradient/w-grad" in collection.summary_names
    assert collection.moving_average_values()["SummaryGradient/w/rms"] == pytest.approx(np.sqrt(12.5))
    assert not any(n.startswith("w-grad") or n == "grad_global_norm"
                   for n in [*collection.summary_names, *collection.moving_average_names])
    histogram = {name: value for name, kind, value in collection.summary_values() if kind == "histogram"}
    assert set(histogram) == {"SummaryGradient/w-grad"}

    with caplog.at_level(logging.WARNING, logger="trainstack.tensorpack"):
        unwritten = train(Linear(lambda: apply_grad_processors(tfv1.train.GradientDescentOptimizer(LR),
                                                               [SummaryGradient(collections=["AAA"])])), df)
    assert "'SummaryGradient/w-grad', collections=['AAA']): not written, as in TF1" in caplog.text
    assert "SummaryGradient/w-grad" not in unwritten.summary_collection.summary_names
    assert "SummaryGradient/w/rms" in unwritten.summary_collection.moving_average_names
