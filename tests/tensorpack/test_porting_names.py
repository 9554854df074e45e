"""Names a ported tensorpack script uses (issue 13): each works as tensorpack's did, or fails clearly."""
from __future__ import annotations

import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from trainstack.callbacks import MergeAllSummaries
from trainstack.loop import Callback
from trainstack.tensorpack.predict.dataset import SimpleDatasetPredictor
from trainstack.tensorpack.tf1 import (
    DataParallelBuilder,
    ModelDesc,
    SimpleTrainer,
    TowerContext,
    TowerFunc,
    add_param_summary,
    get_global_step_var,
    l2_regularizer,
    regularize_cost,
)
from trainstack.tensorpack.tfutils.sessinit import SaverRestore, SaverRestoreRelaxed, get_model_loader
from trainstack.towers import OfflinePredictor, PredictConfig, SmartInit, TrainConfig, launch_train_with_config


class Fetch(Callback):
    """Fetches named tensors of the main tower at every step."""

    def __init__(self, *names):
        self.names, self.values = list(names), []

    def _before_run(self, ctx):
        return self.names

    def _after_run(self, ctx, values):
        self.values.append([np.asarray(v) for v in values.results])


class Model(ModelDesc):
    """Two named Dense layers; ``body(self, x, label)`` (set by a test) adds to the cost."""

    def __init__(self, body=None, lr=0.1, body_only=False):
        self.fc = keras.layers.Dense(3, name="fc")
        self.out = keras.layers.Dense(2, name="out")
        self.body, self.lr, self.body_only, self.trainings = body, lr, body_only, []

    def inputs(self):
        return [tf.TensorSpec([None, 4], tf.float32, "x"), tf.TensorSpec([None], tf.int32, "label")]

    def build_graph(self, x, label):
        self.trainings.append(self.training)
        logits = tf.identity(self.out(tf.nn.relu(self.fc(x))), name="logits")
        cost = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=label, logits=logits))
        if self.body is not None:
            cost = self.body(self, x, label) + (0.0 if self.body_only else cost)
        return tf.identity(cost, name="cost")

    def optimizer(self):
        return keras.optimizers.SGD(self.lr)


def train(model, df, *callbacks, max_epoch=1, extra=()):
    trainer = SimpleTrainer()
    launch_train_with_config(TrainConfig(dataflow=df, model=model, callbacks=list(callbacks),
                                         extra_callbacks=list(extra), monitors=[], max_epoch=max_epoch),
                             trainer)
    return trainer


def test_l2_regularizer_is_tensorpacks_half_sum_of_squares():
    assert float(l2_regularizer(0.5)(tf.constant([1.0, 2.0]))) == pytest.approx(0.5 * 5 / 2)


def test_regularize_cost_sums_the_matching_variables_in_a_training_tower():
    model = Model()
    seen = {}

    def tower(x):
        model.fc(x)
        model.out(model.fc(x))
        seen["wd"] = regularize_cost("fc/kernel", l2_regularizer(0.1))
        seen["all"] = regularize_cost(".*", lambda v: tf.reduce_sum(v))
        return seen["wd"], seen["all"]

    fn = TowerFunc(tower, [tf.TensorSpec([None, 4], tf.float32, "x")])

    @tf.function
    def step(x, training):
        with TowerContext("tower0" if training else "", is_training=training):
            return fn(x)

    wd, total = step(tf.ones([2, 4]), True)
    kernel = model.fc.kernel.numpy()
    assert float(wd) == pytest.approx(0.1 * float(np.sum(kernel ** 2)) / 2, rel=1e-5)
    everything = sum(float(np.sum(w.numpy())) for w in (*model.fc.weights, *model.out.weights))
    assert float(total) == pytest.approx(everything, rel=1e-5)
    # an inference tower: 0, as in tensorpack
    assert [float(v) for v in step(tf.ones([2, 4]), False)] == [0.0, 0.0]


def test_regularize_cost_trains_inside_build_graph(make_df):
    # the cost is only the L2 term of the fc kernel: SGD with lr 0.1 scales it by 0.9 each step
    body = lambda self, x, label: regularize_cost("^fc/kernel$", l2_regularizer(1.0))  # noqa: E731
    model = Model(body=body, body_only=True)
    df = make_df(3)
    model.fc.build((None, 4))   # built before the tower: still the model's variable
    model.out.build((None, 3))
    before = model.fc.kernel.numpy().copy()
    out_bias = model.out.bias
    train(model, df)
    np.testing.assert_allclose(model.fc.kernel.numpy(), before * 0.9 ** 3, rtol=1e-5)
    assert out_bias is model.out.bias and not np.any(model.out.bias.numpy())  # out/ not regularized


def test_regularize_cost_outside_a_tower_is_a_clear_error():
    with pytest.raises(RuntimeError, match="inside the tower function"):
        regularize_cost(".*", l2_regularizer(1.0))


def test_add_param_summary_reports_matching_variables(make_df):
    body = lambda self, x, label: (add_param_summary(("fc/kernel", ["rms", "histogram"]),  # noqa: E731
                                                     (".*/bias", ["mean"])) or 0.0)
    model = Model(body=body)
    trainer = train(model, make_df(2), extra=[MergeAllSummaries()])
    names = trainer.monitors.scalar_names()
    assert "param-summary/fc/kernel-rms" in names and "param-summary/out/bias-mean" in names
    assert not any(n.startswith("param-summary/out/kernel") for n in names)  # not matched
    assert not any(n.startswith("param-summary/fc/kernel-") and "fc/kernelx" in n for n in names)
    kernel = model.fc.kernel.numpy()
    assert trainer.monitors.get_latest("param-summary/fc/kernel-rms") == pytest.approx(
        float(np.sqrt(np.mean(kernel ** 2))), rel=1e-5)
    with pytest.raises(TypeError, match="TF1 graph collections"):
        add_param_summary((".*", ["rms"]), collections=["x"])


def test_get_global_step_var_reads_the_trainers_step_inside_the_step(make_df):
    def body(self, x, label):
        tf.identity(get_global_step_var(), name="gs")
        return 0.0

    fetch = Fetch("gs")
    trainer = train(Model(body=body), make_df(3), fetch, max_epoch=2)
    assert [int(v[0]) for v in fetch.values] == [0, 1, 2, 3, 4, 5]
    assert trainer.global_step == 6
    view = get_global_step_var()
    assert int(view) == 6 and view.dtype == tf.int64
    assert not hasattr(view, "assign")  # a view: the loop owns the counter


def test_model_desc_training_is_the_tower_contexts(make_df):
    model = Model()
    trainer = train(model, make_df(2))
    assert model.trainings and all(model.trainings)
    predictor = trainer.get_predictor(["x"], ["logits"])
    predictor(np.zeros((1, 4), "float32"))
    assert model.trainings[-1] is False
    with pytest.raises(RuntimeError, match="inside build_graph"):
        model.training  # noqa: B018


def test_simple_dataset_predictor_predicts_each_datapoint(make_df):
    class Flow:
        resets = 0

        def __init__(self, data):
            self.data = data

        def __len__(self):
            return len(self.data)

        def __iter__(self):
            return iter(self.data)

        def reset_state(self):
            Flow.resets += 1

    data = [(x,) for x, _ in make_df(3, batch=5)]
    config = PredictConfig(model=Model(), input_names=["x"], output_names=["logits"])
    pred = SimpleDatasetPredictor(config, Flow(data))
    results = pred.get_all_result()
    assert len(results) == 3 and Flow.resets == 1
    direct = OfflinePredictor(config)
    for (x,), out in zip(data, results):
        assert out[0].shape == (5, 2)
        np.testing.assert_allclose(out[0], direct(x)[0], rtol=1e-6)
    first = next(pred.get_result())
    np.testing.assert_allclose(first[0], results[0][0])


def test_saver_restore_and_get_model_loader_are_the_cores_initializers_by_tensorpacks_names():
    """``SaverRestore`` is ``CheckpointInit`` under tensorpack's signature, whose ``prefix`` (a name scope)
    is refused; ``SaverRestoreRelaxed`` skips mismatched shapes; ``get_model_loader`` is this layer's
    ``SmartInit`` (the core's, a checkpoint path a SaverRestore: tests/tensorpack/test_tf1_checkpoint_by_name.py)."""
    from trainstack.tensorpack.tfutils.sessinit import SmartInit as TensorpackSmartInit
    from trainstack.towers import CheckpointInit

    with pytest.raises(TypeError, match="prefix='tower0'.*object"):
        SaverRestore("/nonexistent", prefix="tower0")
    assert SaverRestoreRelaxed.__mro__[1:3] == (SaverRestore, CheckpointInit)
    assert get_model_loader is TensorpackSmartInit
    assert type(get_model_loader({"w": np.zeros(2)})) is type(SmartInit({"w": np.zeros(2)}))  # the core's DictRestore


def test_data_parallel_builder_names_its_replacement():
    with pytest.raises(NotImplementedError, match="SyncMultiGPUTrainerReplicated"):
        DataParallelBuilder(["/gpu:0"])
    # call_for_each_tower (build_on_towers, its older name) builds tensorpack's towers; a multi-GPU
    # GAN trainer built with it: tests/tensorpack/test_tf1_gan_multitower.py
    from trainstack.towers import get_current_tower_context

    def tower():
        ctx = get_current_tower_context()
        return ctx.name, ctx.index, ctx.is_training

    assert DataParallelBuilder.build_on_towers([0, 1], tower, devices=["/cpu:0", "/cpu:0"]) == [
        ("tower0", 0, True), ("tower1", 1, True)]


def test_training_inside_a_tf1_graph_block_works_as_written(make_df):
    """tensorpack's scripts train inside `with tf.Graph().as_default():`; trainstack runs as it
    would outside the block, and what the script built in the block's graph stays usable."""
    graph = tf.Graph()
    with graph.as_default():
        before = tf.constant(2.0, name="built_before")
        model = Model()
        trainer = train(model, make_df(3), max_epoch=2)
        assert trainer.global_step == 6
        assert tf.compat.v1.get_default_graph() is graph and not tf.executing_eagerly()
        after = tf.add(before, 1.0, name="built_after")  # the script's graph still takes ops
    assert before.graph is graph and after.graph is graph
    kernel = model.fc.kernel.numpy()  # an eager variable, trained
    assert kernel.shape == (4, 3)


def test_training_after_disable_eager_execution_names_the_call():
    code = ("import tensorflow as tf\n"
            "tf.compat.v1.disable_eager_execution()\n"
            "from trainstack.towers import *\n"
            "try:\n"
            "    launch_train_with_config(object(), SimpleTrainer())  # checked first\n"
            "except RuntimeError as e:\n"
            "    print('ERROR', e)\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "ERROR launch_train_with_config() was called after tf.compat.v1.disable_eager_execution()" \
        in run.stdout, run.stderr[-2000:]


def test_tf1_get_variable_in_build_graph_trains_under_its_tf1_name(make_df):
    """tensorpack's rule for tower functions (tf.get_variable, not tf.Variable) works as written:
    tests/tensorpack/test_tf1_variables.py has the rest."""
    def body(self, x, label):
        with tf.compat.v1.variable_scope("extra"):
            w = tf.compat.v1.get_variable("W", [4, 2], initializer=tf.compat.v1.ones_initializer())
        return tf.reduce_mean(tf.square(tf.matmul(x, w)))

    trainer = train(Model(body=body), make_df(2))
    (w,) = [v for v in trainer.tower_func.variables if v.name == "extra/W:0"]
    assert not np.allclose(w.numpy(), 1.0)  # created once, trained


@pytest.mark.parametrize("call", ["v2", "v1"])
def test_tf1_summaries_in_build_graph_are_reported_by_merge_all_summaries(call, make_df):
    """tf.summary.* in build_graph works as in tensorpack (tests/tensorpack/test_tf1_summaries.py has the rest)."""
    def body(self, x, label):
        (tf.summary.scalar if call == "v2" else tf.compat.v1.summary.scalar)("s", tf.reduce_sum(x))
        return 0.0

    df = make_df(2)
    trainer = train(Model(body=body), df, extra=[MergeAllSummaries()])
    assert trainer.monitors.get_latest("s") == pytest.approx(df[-1][0].sum())  # the epoch's last step


def test_tf_summary_outside_towers_is_unchanged(tmp_path):
    assert not bool(tf.summary.scalar("x", 1.0, step=0))  # no default writer: TensorFlow's own result
    writer = tf.summary.create_file_writer(str(tmp_path))
    with writer.as_default():
        fn = TowerFunc(lambda x: tf.summary.scalar("x", tf.reduce_sum(x), step=0) and tf.reduce_sum(x),
                       [tf.TensorSpec([None], tf.float32, "x")])
        with TowerContext("", is_training=False):
            fn(tf.ones([2]))  # a default writer is set: the user's own summary goes through


def test_predict_config_keeps_tensorpacks_signature_and_refuses_its_tf1_arguments(make_df):
    """tensorpack's ``PredictConfig(model, tower_func, input_signature, input_names, output_names,
    session_creator, session_init, return_input, create_graph)``: the core's, whose TF1 arguments it refuses."""
    from trainstack.tensorpack.predict import PredictConfig as TensorpackPredictConfig

    with pytest.raises(TypeError, match="session_creator=.*RuntimeConfig"):
        TensorpackPredictConfig(model=Model(), output_names=["logits"], session_creator=object())
    with pytest.raises(ValueError, match="create_graph=False"):
        TensorpackPredictConfig(model=Model(), output_names=["logits"], create_graph=False)
    model = Model()
    config = TensorpackPredictConfig(model, None, None, ["x"], ["logits"], None, None, True)  # positional, as tensorpack
    assert isinstance(config, PredictConfig) and config.return_input and config.input_names == ["x"]
    (x,), (logits,) = OfflinePredictor(config)(make_df(1, batch=3)[0][0])
    np.testing.assert_allclose(logits, OfflinePredictor(PredictConfig(model=model, input_names=["x"],
                                                                      output_names=["logits"]))(x)[0], rtol=1e-6)


def test_smart_init_loads_tensorpacks_npy_a_pickled_dict(tmp_path):
    """tensorpack's ``.npy`` model files (a pickled dict of arrays) load through this layer's ``SmartInit``
    (the core's refuses them: tests/towers/test_sessinit.py)."""
    from trainstack.towers import DictRestore

    model = Model()
    config = PredictConfig(model=model, input_names=["x"], output_names=["logits"])
    OfflinePredictor(config)  # the model's variables exist
    arrays = {v.path: np.full(v.shape, 0.25, "float32") for v in [*model.fc.weights, *model.out.weights]}
    np.save(tmp_path / "model.npy", arrays, allow_pickle=True)
    init = get_model_loader(str(tmp_path / "model.npy"))
    assert isinstance(init, DictRestore)
    x = np.ones((1, 4), "float32")
    predicted = OfflinePredictor(PredictConfig(model=model, input_names=["x"], output_names=["logits"],
                                               session_init=init))(x)[0]
    from_dict = OfflinePredictor(PredictConfig(model=Model(), input_names=["x"], output_names=["logits"],
                                               session_init=arrays))(x)[0]
    np.testing.assert_allclose(predicted, from_dict, rtol=1e-6)
    fresh = OfflinePredictor(PredictConfig(model=Model(), input_names=["x"], output_names=["logits"]))(x)[0]
    assert not np.allclose(predicted, fresh)  # not initial values
    np.save(tmp_path / "plain.npy", np.zeros(3))
    with pytest.raises(ValueError, match="not a dict"):
        get_model_loader(str(tmp_path / "plain.npy"))
