"""TrainConfig: its arguments, their defaults and the errors for bad ones."""
from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from trainstack.callbacks import JSONWriter, ModelSaver, ProgressBar
from trainstack.inputs import FeedInput, QueueInput
from trainstack.towers import CheckpointInit, DictRestore, JustCurrentSession, RuntimeConfig, TrainConfig


def test_defaults(model, dataflow):
    config = TrainConfig(dataflow=dataflow, model=model)
    assert config.dataflow is dataflow and config.data is None and config.model is model
    assert config.callbacks == []
    assert config.extra_callbacks is None and config.monitors is None  # the trainer's defaults
    assert config.session_init is None and config.runtime is None
    assert (config.starting_epoch, config.max_epoch) == (1, 99999)
    assert config.steps_per_epoch == len(dataflow)


def test_steps_per_epoch_defaults_to_the_input_size(model, make_df):
    assert TrainConfig(dataflow=make_df(7), model=model).steps_per_epoch == 7
    assert TrainConfig(data=FeedInput(make_df(5)), model=model).steps_per_epoch == 5
    config = TrainConfig(data=QueueInput(make_df(3)), model=model, steps_per_epoch=11)
    assert config.steps_per_epoch == 11


def test_input_of_unknown_size_needs_steps_per_epoch(model, make_df):
    batches = make_df(3)

    class NoLen:
        def __iter__(self):
            return iter(batches)

    with pytest.raises(ValueError, match=r"cannot default steps_per_epoch.*NoLen has no __len__"):
        TrainConfig(dataflow=NoLen(), model=model)
    assert TrainConfig(dataflow=NoLen(), model=model, steps_per_epoch=4).steps_per_epoch == 4


def test_exactly_one_of_dataflow_and_data(model, dataflow):
    with pytest.raises(ValueError, match="not both"):
        TrainConfig(dataflow=dataflow, data=FeedInput(dataflow), model=model)
    with pytest.raises(ValueError, match="needs the training input"):
        TrainConfig(model=model)


@pytest.mark.parametrize("kwargs, message", [
    (lambda df: {"data": df}, "must be an InputSource.*pass it as dataflow="),
    (lambda df: {"dataflow": QueueInput(df)}, "InputSource QueueInput; pass it as data="),
    (lambda df: {"dataflow": tf.data.Dataset.range(3)}, "TFDatasetInput"),
    (lambda df: {"dataflow": 42}, "re-iterable"),
    (lambda df: {"dataflow": "abc"}, "re-iterable"),
])
def test_wrong_kind_of_input(model, dataflow, kwargs, message):
    with pytest.raises(TypeError, match=message):
        TrainConfig(model=model, **kwargs(dataflow))


def test_model_must_be_a_model_desc(dataflow):
    with pytest.raises(TypeError, match="model=.*ModelDesc.*object"):
        TrainConfig(dataflow=dataflow, model=object())


def test_callbacks_and_monitors_are_checked(model, dataflow):
    with pytest.raises(TypeError, match=r"callbacks=\) must be a list"):
        TrainConfig(dataflow=dataflow, model=model, callbacks=ModelSaver())
    with pytest.raises(TypeError, match="item 1 .*expected a Callback"):
        TrainConfig(dataflow=dataflow, model=model, callbacks=[ModelSaver(), "saver"])
    with pytest.raises(TypeError, match="JSONWriter.* is a monitor; pass it in monitors="):
        TrainConfig(dataflow=dataflow, model=model, extra_callbacks=[JSONWriter()])
    with pytest.raises(TypeError, match="monitors=.*item 0 .*expected a MonitorBase"):
        TrainConfig(dataflow=dataflow, model=model, monitors=[ProgressBar()])
    config = TrainConfig(dataflow=dataflow, model=model, callbacks=(ModelSaver(),), extra_callbacks=[],
                         monitors=[JSONWriter()])
    assert isinstance(config.callbacks, list) and config.extra_callbacks == []


@pytest.mark.parametrize("name, value", [("starting_epoch", -1), ("max_epoch", 2.5),
                                         ("steps_per_epoch", "10"), ("steps_per_epoch", True)])
def test_counts_must_be_non_negative_integers(model, dataflow, name, value):
    with pytest.raises(ValueError, match=f"TrainConfig\\({name}=\\.\\.\\.\\) must be a non-negative integer"):
        TrainConfig(dataflow=dataflow, model=model, **{name: value})


def test_zero_steps_per_epoch(model, dataflow):
    with pytest.raises(ValueError, match="at least one step"):
        TrainConfig(dataflow=dataflow, model=model, steps_per_epoch=0)


def test_tensorpacks_arguments_name_what_to_pass_and_the_tensorpack_layer(model, dataflow):
    """The older form's towers and TF1's session arguments are trainstack.tensorpack's TrainConfig's
    (tests/tensorpack/test_train_config.py); the core's names the replacements."""
    for kwargs in ({"session_config": tf.compat.v1.ConfigProto()}, {"session_creator": None}, {"nr_tower": 2},
                   {"tower": [0, 1]}, {"predict_tower": [0]}):
        with pytest.raises(TypeError, match=r"tensorpack's arguments.*SyncMultiGPUTrainerReplicated\(gpus\).*"
                                            r"runtime=RuntimeConfig.*from trainstack.tensorpack import TrainConfig"):
            TrainConfig(dataflow=dataflow, model=model, **kwargs)


def test_unknown_arguments_list_the_valid_ones(model, dataflow):
    with pytest.raises(TypeError,
                       match=r"unexpected arguments \['max_epochs'\].*'max_epoch'.*'runtime'"):
        TrainConfig(dataflow=dataflow, model=model, max_epochs=3)
    with pytest.raises(TypeError, match=r"optimizer\(\)"):
        TrainConfig(dataflow=dataflow, model=model, optimizer=tf.keras.optimizers.SGD())
    with pytest.raises(TypeError, match="renamed dataflow="):
        TrainConfig(dataset=dataflow, model=model)


def test_runtime_must_be_a_runtime_config(model, dataflow):
    with pytest.raises(TypeError, match="RuntimeConfig"):
        TrainConfig(dataflow=dataflow, model=model, runtime={"intra_op_threads": 2})
    runtime = RuntimeConfig(intra_op_threads=2)
    assert TrainConfig(dataflow=dataflow, model=model, runtime=runtime).runtime is runtime


def test_session_init_is_resolved_when_the_config_is_built(model, dataflow, tmp_path):
    config = TrainConfig(dataflow=dataflow, model=model, session_init={"dense/kernel": np.zeros((4, 2))})
    assert isinstance(config.session_init, DictRestore)
    init = JustCurrentSession()
    assert TrainConfig(dataflow=dataflow, model=model, session_init=init).session_init is init
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        TrainConfig(dataflow=dataflow, model=model, session_init=str(tmp_path))  # an empty directory
    with pytest.raises(TypeError, match="SmartInit takes"):
        TrainConfig(dataflow=dataflow, model=model, session_init=3.5)

    ckpt = tf.train.Checkpoint(v=tf.Variable(1.0)).save(str(tmp_path / "ckpt"))
    assert isinstance(TrainConfig(dataflow=dataflow, model=model, session_init=ckpt).session_init,
                      CheckpointInit)


def test_max_epoch_before_starting_epoch_is_logged(model, dataflow, caplog):
    with caplog.at_level("WARNING", logger="trainstack.towers"):
        TrainConfig(dataflow=dataflow, model=model, starting_epoch=5, max_epoch=3)
    assert "no epoch will run" in caplog.text
