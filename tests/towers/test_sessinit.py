"""Initializers: CheckpointInit, DictRestore, ChainInit, SmartInit.

The trainers of the towers layer are not needed: a loop ``Trainer`` exposing
``checkpoint_objects`` (Keras layers in a tf.Module plus a Keras optimizer) is
what the initializers and ModelSaver see.
"""
from __future__ import annotations

import logging
import os
import pathlib

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras
import numpy as np
import pytest
import tensorflow as tf

from trainstack.callbacks import ModelSaver
from trainstack.loop import Trainer
from trainstack.towers.session import (
    ChainInit,
    CheckpointInit,
    DictRestore,
    JustCurrentSession,
    SessionInit,
    SmartInit,
)


class Net(tf.Module):
    """Two Dense layers (3 -> units -> 2), built; optionally a third one."""

    def __init__(self, units: int = 4, extra_layer: bool = False) -> None:
        super().__init__()
        self.d1 = keras.layers.Dense(units, name="d1")
        self.d2 = keras.layers.Dense(2, name="d2")
        self.d1.build((None, 3))
        self.d2.build((None, units))
        if extra_layer:
            self.d3 = keras.layers.Dense(2, name="d3")
            self.d3.build((None, 2))

    @property
    def keras_variables(self) -> list:
        layers = [self.d1, self.d2] + ([self.d3] if hasattr(self, "d3") else [])
        return [v for layer in layers for v in layer.variables]

    def __call__(self, x):
        return self.d2(tf.nn.relu(self.d1(x)))


class NetTrainer(Trainer):
    """A loop Trainer training ``Net`` with Adam; ``checkpoint_objects`` = model + optimizer."""

    def __init__(self, seed: int = 0, units: int = 4, extra_layer: bool = False) -> None:
        super().__init__()
        keras.utils.set_random_seed(seed)
        self.net = Net(units, extra_layer)
        self.optimizer = keras.optimizers.Adam(0.05)
        self.optimizer.build(self.net.keras_variables)
        rng = np.random.default_rng(seed)
        x = tf.constant(rng.normal(size=(8, 3)).astype("float32"))
        y = tf.constant(rng.normal(size=(8, 2)).astype("float32"))
        trainable = [v for v in self.net.keras_variables if v.trainable]

        @tf.function
        def step():
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(self.net(x) - y))
            self.optimizer.apply_gradients(zip(tape.gradient(loss, trainable), trainable))
            return {"loss": loss}

        self.train_op = step

    @property
    def checkpoint_objects(self) -> dict:
        return {"model": self.net, "optimizer": self.optimizer}

    def all_variables(self) -> list:
        return self.net.keras_variables + list(self.optimizer.variables)


def values(variables) -> list[np.ndarray]:
    return [np.array(v.numpy()) for v in variables]


def assert_same(a, b) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


def assert_all_differ(a, b) -> None:
    for x, y in zip(a, b):
        assert not np.array_equal(x, y)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A run of 3 steps checkpointed by ModelSaver: (its directory, its final values, the trainer)."""
    directory = str(tmp_path_factory.mktemp("ckpt"))
    trainer = NetTrainer(seed=1)
    trainer.train([ModelSaver(checkpoint_dir=directory)], [], steps_per_epoch=3, max_epoch=1)
    assert int(trainer.optimizer.iterations.numpy()) == 3
    return directory, values(trainer.all_variables()), trainer


def test_checkpoint_restores_model_and_optimizer_from_model_saver(saved, caplog):
    directory, expected, source = saved
    trainer = NetTrainer(seed=2)
    assert_all_differ(values(trainer.net.keras_variables), expected)
    init = CheckpointInit(directory)
    assert init.path == tf.train.latest_checkpoint(directory)
    with caplog.at_level(logging.INFO, logger="trainstack.towers"):
        init.init(trainer)
    assert_same(values(trainer.all_variables()), expected)
    report = init.report
    assert report.missing == [] and report.unused == [] and report.skipped == []  # loop_state not "unused"
    assert sorted(report.restored) == sorted(v.path for v in trainer.all_variables())
    assert len(report.restored) == len(source.all_variables())
    assert trainer.loop.global_step == 0  # the loop state is the resume logic's business
    assert f"Restored {len(expected)} variables" in caplog.text
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_checkpoint_path_forms(saved, tmp_path):
    directory, _, _ = saved
    prefix = tf.train.latest_checkpoint(directory)
    for form in (directory, prefix, prefix + ".index", os.path.join(directory, "checkpoint"),
                 pathlib.Path(prefix), prefix + ".data-00000-of-00001"):
        assert CheckpointInit(form).path == prefix
    with pytest.raises(FileNotFoundError, match="no checkpoint in directory"):
        CheckpointInit(str(tmp_path))
    with pytest.raises(FileNotFoundError, match="no checkpoint at"):
        CheckpointInit(os.path.join(directory, "model-999"))
    with pytest.raises(ValueError, match="NumPy file.*DictRestore"):
        CheckpointInit(str(tmp_path / "weights.npz"))
    with pytest.raises(TypeError, match="checkpoint path"):
        CheckpointInit(42)


def test_checkpoint_reports_missing_on_both_sides(saved, caplog):
    directory, expected, source = saved
    trainer = NetTrainer(seed=3, extra_layer=True)
    ema = tf.Variable(5.0, name="ema")
    trainer.__class__ = type("Partial", (NetTrainer,), {
        "checkpoint_objects": property(lambda self: {"model": self.net, "ema": ema})})
    before = values(trainer.all_variables())

    with pytest.raises(ValueError, match="strict") as err:
        CheckpointInit(directory, strict=True).init(trainer)
    assert "d3/kernel" in str(err.value) and "optimizer/_iterations" in str(err.value)
    assert_same(values(trainer.all_variables()), before)  # nothing restored

    init = CheckpointInit(directory)
    with caplog.at_level(logging.INFO, logger="trainstack.towers"):
        init.init(trainer)
    assert init.report.missing == ["d3/bias", "d3/kernel", "ema"]
    assert "optimizer/_iterations" in init.report.unused
    assert len(init.report.unused) == len(source.optimizer.variables)
    assert not any(name.startswith(("loop_state", "save_counter")) for name in init.report.unused)
    warnings = " ".join(r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)
    assert "d3/kernel" in warnings and "ema" in warnings and "optimizer/_iterations" in warnings
    assert_same(values(trainer.net.keras_variables[:4]), expected[:4])
    assert_same(values(trainer.net.keras_variables[4:]), before[4:6])  # d3 kept
    assert float(ema.numpy()) == 5.0
    assert int(trainer.optimizer.iterations.numpy()) == 0  # not in checkpoint_objects: untouched


def test_checkpoint_shape_mismatch(saved):
    directory, expected, _ = saved
    trainer = NetTrainer(seed=4, units=5)
    before = values(trainer.all_variables())
    with pytest.raises(ValueError, match=r"d1/kernel: checkpoint \(3, 4\), variable \(3, 5\)"):
        CheckpointInit(directory).init(trainer)
    assert_same(values(trainer.all_variables()), before)  # checked before restoring anything

    init = SmartInit(directory, ignore_mismatch=True)
    init.init(trainer)
    names = [v.path for v in trainer.net.keras_variables]
    assert "d1/kernel" in init.report.skipped and "d2/bias" in init.report.restored
    for name, now, old, saved_value in zip(names, values(trainer.net.keras_variables), before, expected):
        np.testing.assert_array_equal(now, saved_value if name == "d2/bias" else old)
    assert int(trainer.optimizer.iterations.numpy()) == 3


def test_checkpoint_ignore(saved):
    directory, expected, _ = saved
    trainer = NetTrainer(seed=5)
    before = values(trainer.all_variables())
    init = CheckpointInit(directory, ignore=["optimizer"])
    init.init(trainer)
    n_model = len(trainer.net.keras_variables)
    assert_same(values(trainer.net.keras_variables), expected[:n_model])
    assert_same(values(trainer.optimizer.variables), before[n_model:])
    assert sorted(init.report.skipped) == sorted(v.path for v in trainer.optimizer.variables)

    trainer = NetTrainer(seed=6)
    before = values(trainer.all_variables())
    CheckpointInit(directory, ignore=("d1/bias:0", "optimizer/_iterations")).init(trainer)
    for var, old, new in zip(trainer.all_variables(), before, expected):
        keep = var.path in ("d1/bias", trainer.optimizer.iterations.path)
        np.testing.assert_array_equal(var.numpy(), old if keep else new)

    with pytest.raises(ValueError, match=r"ignore=\['nothing'\] names nothing"):
        CheckpointInit(directory, ignore=["nothing"]).init(NetTrainer(seed=7))


def test_ignoring_the_optimizer_keeps_model_weights_it_tracks(tmp_path):
    """Keras Sequential: the checkpoint keys of the model's weights go through the optimizer."""
    def make(seed):
        keras.utils.set_random_seed(seed)
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4), keras.layers.Dense(2)])
        opt = keras.optimizers.SGD(0.1, momentum=0.9)
        opt.build(model.trainable_variables)
        for v in opt.variables:
            v.assign(tf.random.normal(v.shape) if v.shape.rank else v + seed)
        return model, opt

    model, opt = make(1)
    path = tf.train.Checkpoint(model=model, optimizer=opt, best_stat=tf.Variable(0.5)).save(
        str(tmp_path / "plain"))
    keys = [k for k, _ in tf.train.list_variables(path)]
    assert any(k.startswith("optimizer/_trainable_variables/") for k in keys)

    model2, opt2 = make(2)
    opt_before = values(opt2.variables)
    holder = type("Holder", (), {"checkpoint_objects": {"model": model2, "optimizer": opt2}})()
    init = SmartInit([path])
    assert isinstance(init, ChainInit)
    CheckpointInit(path, ignore=["optimizer"]).init(holder)
    assert_same(values(model2.variables), values(model.variables))
    assert_same(values(opt2.variables), opt_before)

    init = CheckpointInit(path)
    init.init(holder)
    assert init.report.missing == [] and init.report.unused == []  # best_stat is the saver's
    assert_same(values(opt2.variables), values(opt.variables))

    # a variable reachable two ways (model and optimizer) is ignored on both
    model3, opt3 = make(3)
    kernel = model3.layers[0].kernel
    kept = kernel.numpy()
    holder = type("Holder", (), {"checkpoint_objects": {"model": model3, "optimizer": opt3}})()
    init = CheckpointInit(path, ignore=[kernel.path])
    init.init(holder)
    assert init.report.skipped == [kernel.path]
    np.testing.assert_array_equal(kernel.numpy(), kept)
    assert_same(values(model3.variables[1:]), values(model.variables[1:]))


def test_a_name_based_checkpoint_is_refused_naming_the_tensorpack_layers_saver_restore(tmp_path):
    prefix = str(tmp_path / "tf1")
    with tf.Graph().as_default():
        tf.compat.v1.get_variable("W", shape=[2], initializer=tf.compat.v1.zeros_initializer())
        saver = tf.compat.v1.train.Saver()
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            saver.save(sess, prefix)
    # read by name by trainstack.tensorpack's SaverRestore (tests/tensorpack/test_tf1_checkpoint_by_name.py)
    trainer = NetTrainer(seed=0)
    before = values(trainer.all_variables())
    with pytest.raises(ValueError, match=r"name-based \(TF1\) checkpoint.*SaverRestore\(path\).*DictRestore"):
        CheckpointInit(prefix).init(trainer)
    assert_same(values(trainer.all_variables()), before)


def test_dict_restore_by_path_name_and_key(caplog):
    trainer = NetTrainer(seed=8)
    w = tf.Variable([1.0, 2.0], name="w")
    plain = tf.Variable(0, name="counter", dtype=tf.int64)
    trainer.__class__ = type("WithW", (NetTrainer,), {"checkpoint_objects": property(
        lambda self: {"model": self.net, "optimizer": self.optimizer, "w": w, "steps": plain})})
    kernel = np.arange(12, dtype="float64").reshape(3, 4)  # float64 -> float32
    init = DictRestore({"d1/kernel": kernel, "d2/bias:0": np.array([7.0, 8.0], "float32"),
                        "w": [3.0, 4.0], "counter:0": 9, "not/a/variable": np.zeros(3)})
    with caplog.at_level(logging.INFO, logger="trainstack.towers"):
        init.init(trainer)
    np.testing.assert_array_equal(trainer.net.d1.kernel.numpy(), kernel.astype("float32"))
    np.testing.assert_array_equal(trainer.net.d2.bias.numpy(), [7.0, 8.0])
    np.testing.assert_array_equal(w.numpy(), [3.0, 4.0])
    assert int(plain.numpy()) == 9
    report = init.report
    assert report.restored == sorted(["d1/kernel", "d2/bias", "w", "steps"])
    assert report.unused == ["not/a/variable"]
    assert "d1/bias" in report.missing and trainer.optimizer.iterations.path in report.missing
    assert "not/a/variable" in caplog.text and "d2/kernel" in caplog.text


def test_dict_restore_errors_change_nothing():
    trainer = NetTrainer(seed=9)
    before = values(trainer.net.keras_variables)
    good = np.ones((3, 4), "float32")
    with pytest.raises(ValueError, match=r"d2/kernel: value \(3, 2\), variable \(4, 2\)"):
        DictRestore({"d1/kernel": good, "d2/kernel": np.zeros((3, 2))}).init(trainer)
    assert_same(values(trainer.net.keras_variables), before)
    with pytest.raises(TypeError, match="does not cast"):
        DictRestore({"d1/kernel": good, "d2/bias": np.array(["a", "b"])}).init(trainer)
    assert_same(values(trainer.net.keras_variables), before)

    init = DictRestore({"d1/kernel": good, "d2/kernel": np.zeros((3, 2))}, ignore_mismatch=True)
    init.init(trainer)
    np.testing.assert_array_equal(trainer.net.d1.kernel.numpy(), good)
    np.testing.assert_array_equal(trainer.net.d2.kernel.numpy(), before[2])
    assert init.report.skipped == ["d2/kernel"] and "d2/kernel" not in init.report.missing

    twins = type("Twins", (), {"checkpoint_objects": {"a": tf.Variable(1.0, name="v"),
                                                      "b": tf.Variable(2.0, name="v")}})()
    with pytest.raises(ValueError, match="'v' names 2 variables"):
        DictRestore({"v": 3.0}).init(twins)
    DictRestore({"b": 3.0}).init(twins)  # a path is unambiguous
    assert float(twins.checkpoint_objects["b"].numpy()) == 3.0
    with pytest.raises(TypeError, match="dict"):
        DictRestore([("d1/kernel", good)])


def test_chain_init_runs_in_order(saved):
    directory, expected, _ = saved
    trainer = NetTrainer(seed=10)
    bias = np.array([-1.0, -2.0], "float32")
    init = SmartInit([directory, {"d2/bias": bias}])
    assert isinstance(init, ChainInit)
    assert [type(i) for i in init.inits] == [CheckpointInit, DictRestore]
    init.init(trainer)
    np.testing.assert_array_equal(trainer.net.d2.bias.numpy(), bias)
    assert_same(values(trainer.net.keras_variables[:3]), expected[:3])
    with pytest.raises(TypeError, match="item 1"):
        ChainInit([JustCurrentSession(), directory])


def test_smart_init_dispatch(saved, tmp_path):
    directory, expected, _ = saved
    for nothing in (None, "", [], {}):
        assert type(SmartInit(nothing)) is JustCurrentSession
    existing = DictRestore({})
    assert SmartInit(existing) is existing
    assert isinstance(SmartInit({"d1/bias": np.zeros(4)}), DictRestore)
    prefix = tf.train.latest_checkpoint(directory)
    for path in (directory, prefix, pathlib.Path(directory)):
        init = SmartInit(path)
        assert isinstance(init, CheckpointInit) and init.path == prefix
    assert SmartInit(directory, ignore_mismatch=True).ignore_mismatch

    arrays = {"d1/bias": np.full(4, 0.5), "d2/bias": np.full(2, -0.5)}
    np.savez(tmp_path / "w.npz", **arrays)
    trainer = NetTrainer(seed=11)
    init = SmartInit(str(tmp_path / "w.npz"))
    assert isinstance(init, DictRestore)
    init.init(trainer)
    np.testing.assert_array_equal(trainer.net.d1.bias.numpy(), arrays["d1/bias"])
    np.testing.assert_array_equal(trainer.net.d2.bias.numpy(), arrays["d2/bias"])
    np.save(tmp_path / "w.npy", arrays, allow_pickle=True)  # tensorpack's .npy, a pickled dict: the tensorpack layer's
    with pytest.raises(ValueError, match=r"\.npy file: tensorpack's pickled dict.*trainstack.tensorpack's SmartInit"):
        SmartInit(str(tmp_path / "w.npy"))
    with pytest.raises(FileNotFoundError, match="does not exist"):
        SmartInit(str(tmp_path / "missing.npz"))
    with pytest.raises(FileNotFoundError, match="no checkpoint prefix"):
        SmartInit(str(tmp_path / "nothing-here"))
    with pytest.raises(TypeError, match="SmartInit takes None, a SessionInit.*got int"):
        SmartInit(3)


def test_trainer_without_checkpoint_objects():
    bare = Trainer()
    JustCurrentSession().init(bare)  # needs nothing
    with pytest.raises(AttributeError, match="checkpoint_objects.*Trainer has none"):
        DictRestore({"x": 1}).init(bare)
    empty = type("Empty", (), {"checkpoint_objects": {}})()
    with pytest.raises(TypeError, match="non-empty dict"):
        DictRestore({"x": 1}).init(empty)
    wrong = type("Wrong", (), {"checkpoint_objects": {"x": np.zeros(2)}})()
    with pytest.raises(TypeError, match=r"checkpoint_objects\['x'\] is ndarray"):
        DictRestore({"x": 1}).init(wrong)
    # the same checks as the savers (one helper): a key the savers reserve is refused here too
    reserved = type("Reserved", (), {"checkpoint_objects": {"loop_state": tf.Variable(0.0)}})()
    with pytest.raises(ValueError, match="'loop_state' is reserved"):
        DictRestore({"x": 1}).init(reserved)


def test_custom_session_init_subclass():
    class SetTo(SessionInit):
        def __init__(self, value):
            self.value = value

        def _run_init(self, trainer):
            for var in trainer.net.keras_variables:
                var.assign(tf.fill(var.shape, self.value))

    trainer = NetTrainer(seed=12)
    SetTo(0.25).init(trainer)
    assert all(np.all(v == 0.25) for v in values(trainer.net.keras_variables))
    with pytest.raises(TypeError, match="abstract"):
        SessionInit()
