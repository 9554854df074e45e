"""A TF1 name-based checkpoint (written by ``tf.compat.v1.train.Saver``, keys ``conv0/W``, ``bn0/mean/EMA``)
loads by name into a model written with tensorpack's layer functions (issue 24), as tensorpack's
``SaverRestore``/``SmartInit`` loaded it: every value into the variable of its name, missing names and unused
values warned, optimizer slots reported as training-only, a shape mismatch an error naming the variable."""
from __future__ import annotations

import logging

import numpy as np
import pytest
import tensorflow as tf
import tf1_layer_cases as cases  # by name (this folder is on sys.path, see conftest.py)

from trainstack.loop import Callback
from trainstack.tensorpack.tfutils.sessinit import SaverRestore, SaverRestoreRelaxed, SmartInit
from trainstack.towers import CheckpointInit, OfflinePredictor, PredictConfig, ResumeError

SLOTS = {"conv0/W/Momentum": np.full((3, 3, 1, 4), 0.5, "float32"),
         "fc0/W/Momentum": np.full((64, 3), 0.25, "float32"), "global_step": np.int64(300)}


def write_tf1_checkpoint(prefix: str, values: dict) -> str:
    """What a tensorpack run's ModelSaver wrote: a TF1 graph's variables saved by ``tf.compat.v1.train.Saver``."""
    graph = tf.Graph()
    with graph.as_default():
        variables = [tf.compat.v1.get_variable(name, initializer=tf.constant(value), use_resource=False)
                     for name, value in values.items()]
        saver = tf.compat.v1.train.Saver(variables)
        with tf.compat.v1.Session(graph=graph) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            return saver.save(sess, prefix, global_step=300, write_meta_graph=False)


class Loaded(Callback):
    """The model's variables right after the initializer ran, by name."""

    def _before_train(self):
        self.values = {v.name.split(":")[0]: cases.value(v) for v in self.trainer.tower_func.variables}


def logits_with(session_init) -> np.ndarray:
    predictor = OfflinePredictor(PredictConfig(model=cases.LayerModel(), input_names=["input"],
                                               output_names=["logits"], session_init=session_init))
    return predictor(cases.batches(1)[0][0])[0]


def test_a_tf1_checkpoint_loads_every_value_into_the_variable_of_its_name(tmp_path, caplog):
    prefix = write_tf1_checkpoint(str(tmp_path / "model"), {**cases.WEIGHTS, **SLOTS})
    keys = dict(tf.train.list_variables(prefix))
    assert set(keys) == set(cases.WEIGHTS) | set(SLOTS)  # a genuine name-keyed checkpoint, no object graph

    loaded = Loaded()
    init = SmartInit(str(tmp_path))  # the directory: its latest checkpoint, as tensorpack's SmartInit
    with caplog.at_level(logging.INFO, logger="trainstack.towers"):
        cases.train(cases.LayerModel(), session_init=init, callbacks=[loaded], epochs=1)
    assert sorted(loaded.values) == sorted(cases.WEIGHTS)
    for name, value in cases.WEIGHTS.items():
        np.testing.assert_array_equal(loaded.values[name], value, err_msg=name)
    report = init.report
    assert len(report.restored) == len(cases.WEIGHTS)
    assert (report.missing, report.unused) == ([], [])
    # the optimizer slots and the step counter: reported as training-only, not warned
    assert sorted(report.not_needed) == sorted(SLOTS)
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert not [w for w in warnings if "Momentum" in w or "global_step" in w], warnings
    assert "conv0/W/Momentum, fc0/W/Momentum, global_step" in caplog.text

    # the predictor gives the outputs of the same weights loaded from a tensorpack .npz
    np.savez(tmp_path / "model.npz", **cases.WEIGHTS)
    np.testing.assert_allclose(logits_with(SmartInit(prefix)), logits_with(SmartInit(str(tmp_path / "model.npz"))),
                               rtol=1e-6, atol=1e-6)


def test_missing_names_and_unused_values_are_warned_by_name(tmp_path, caplog):
    values = {k: v for k, v in cases.WEIGHTS.items() if k != "fc0/b"}
    values["fc9/W"] = np.ones((2, 2), "float32")  # a layer this model does not have
    prefix = write_tf1_checkpoint(str(tmp_path / "model"), values)
    loaded = Loaded()
    init = SmartInit(prefix)
    with caplog.at_level(logging.INFO, logger="trainstack.towers"):
        cases.train(cases.LayerModel(), session_init=init, callbacks=[loaded], epochs=1)
    assert (init.report.missing, init.report.unused) == (["fc0/b"], ["fc9/W"])
    warnings = "\n".join(r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING)
    assert "has no value for these 1 variables of the trainer" in warnings and warnings.count("fc0/b") == 1
    assert "match no variable of the trainer and were not used: fc9/W" in warnings
    np.testing.assert_array_equal(loaded.values["fc0/b"], 0)  # kept its initial value
    np.testing.assert_array_equal(loaded.values["fc0/W"], cases.WEIGHTS["fc0/W"])


def test_a_shape_mismatch_names_the_variable_and_both_shapes(tmp_path, caplog):
    prefix = write_tf1_checkpoint(str(tmp_path / "model"), {**cases.WEIGHTS, "fc0/W": np.ones((63, 3), "float32")})
    with pytest.raises(ValueError, match=r"name-based checkpoint.*fc0/W: value \(63, 3\), variable \(64, 3\).*"
                                         r"ignore_mismatch=True"):
        logits_with(SmartInit(prefix))

    loaded = Loaded()
    with caplog.at_level(logging.WARNING, logger="trainstack.towers"):
        cases.train(cases.LayerModel(), session_init=SaverRestoreRelaxed(prefix), callbacks=[loaded], epochs=1)
    assert "fc0/W: value (63, 3), variable (64, 3)" in caplog.text
    assert not np.array_equal(loaded.values["fc0/W"], np.ones((64, 3)))  # kept its initial value
    np.testing.assert_array_equal(loaded.values["conv0/W"], cases.WEIGHTS["conv0/W"])


def test_resuming_from_a_tf1_checkpoint_is_refused_naming_smartinit(tmp_path):
    prefix = write_tf1_checkpoint(str(tmp_path / "model"), cases.WEIGHTS)
    for init in (CheckpointInit(prefix, resume=True), SaverRestore(prefix, resume=True)):
        with pytest.raises(ResumeError, match=r"name-based \(TF1\) checkpoint.*session_init=SmartInit\("):
            cases.train(cases.LayerModel(), session_init=init, epochs=1)


def test_the_cores_checkpoint_init_refuses_a_tf1_checkpoint_naming_saver_restore(tmp_path):
    """The core reads tf.train.Checkpoints only; nothing is restored and the error names this layer's
    SaverRestore / SmartInit, which read the checkpoint by name."""
    prefix = write_tf1_checkpoint(str(tmp_path / "model"), cases.WEIGHTS)
    model = cases.LayerModel()
    fresh = OfflinePredictor(PredictConfig(model=model, input_names=["input"], output_names=["logits"]))
    before = {v.name: cases.value(v) for v in fresh.tower_func.variables}
    with pytest.raises(ValueError, match=r"name-based \(TF1\) checkpoint.*trainstack.tensorpack's "
                                         r"SaverRestore\(path\) or SmartInit\(path\)"):
        CheckpointInit(prefix).init(fresh)
    for v in fresh.tower_func.variables:
        np.testing.assert_array_equal(cases.value(v), before[v.name], err_msg=v.name)
    assert type(SmartInit(prefix)) is SaverRestore and type(SmartInit([prefix]).inits[0]) is SaverRestore
    given = CheckpointInit(prefix)
    assert SmartInit(given) is given  # a SessionInit is used as it is


def test_strict_refuses_a_partial_tf1_checkpoint_and_changes_nothing(tmp_path):
    prefix = write_tf1_checkpoint(str(tmp_path / "model"), {k: v for k, v in cases.WEIGHTS.items() if k != "fc0/b"})
    with pytest.raises(ValueError, match=r"\(strict\): variables not in the checkpoint: \['fc0/b'\]"):
        logits_with(SaverRestore(prefix, strict=True))
    model = cases.LayerModel()
    config = PredictConfig(model=model, input_names=["input"], output_names=["logits"])
    fresh = OfflinePredictor(config)
    before = {v.name: cases.value(v) for v in fresh.tower_func.variables}
    with pytest.raises(ValueError, match="strict"):
        SaverRestore(prefix, strict=True).init(fresh)
    for v in fresh.tower_func.variables:  # none of the values it has was loaded
        np.testing.assert_array_equal(cases.value(v), before[v.name], err_msg=v.name)


def test_an_object_checkpoint_keyed_by_a_models_attribute_loads_the_tf1_variables_by_their_names(tmp_path):
    """A trainstack checkpoint keys a tensorpack model's variables by the model's attributes that hold them
    (GAN.py's ``collect_variables`` sets ``self.g_vars`` while training only): a predictor of the same model
    reaches them by another path, and ``SaverRestore`` finds them by the TF1 names the checkpoint stores."""
    from trainstack.towers import DictRestore
    holder = tf.Module()
    holder.g_vars = [tf.Variable(value, name=name) for name, value in cases.WEIGHTS.items()]
    prefix = tf.train.Checkpoint(model=holder).write(str(tmp_path / "model-1"))
    assert all(n.startswith(("model/g_vars/", "_CHECKPOINTABLE")) for n, _ in tf.train.list_variables(prefix))
    init = SaverRestore(prefix)
    np.testing.assert_array_equal(logits_with(init), logits_with(DictRestore(dict(cases.WEIGHTS))))
    assert len(init.report.restored) == len(cases.WEIGHTS) and not init.report.missing and not init.report.unused
    # a value of another shape under the name is the shape error, naming both shapes
    other = tf.Module()
    other.g_vars = [tf.Variable(np.zeros((3, 3, 1, 5), "float32"), name="conv0/W")]
    prefix = tf.train.Checkpoint(model=other).write(str(tmp_path / "model-2"))
    with pytest.raises(ValueError, match=r"conv0/W.*\(3, 3, 1, 5\).*\(3, 3, 1, 4\)"):
        logits_with(SaverRestore(prefix))
