"""tensorpack's TrainConfig (``trainstack.tensorpack.train.config``): the core's, with the older form's tower
arguments and TF1's session arguments, refused naming RuntimeConfig."""
from __future__ import annotations

import pytest
import tensorflow as tf

from trainstack.tensorpack.tf1 import SimpleTrainer
from trainstack.tensorpack.tf1.legacy.config import reject_session_args, runtime_config_from_proto
from trainstack.tensorpack.train.config import AutoResumeTrainConfig, TrainConfig
from trainstack.towers import AutoResumeTrainConfig as CoreAutoResumeTrainConfig
from trainstack.towers import RuntimeConfig, launch_train_with_config
from trainstack.towers import TrainConfig as CoreTrainConfig


def quiet(**kwargs):
    return dict(extra_callbacks=[], monitors=[], **kwargs)


def test_it_is_the_cores_with_tensorpacks_tower_arguments(model, dataflow):
    config = TrainConfig(dataflow=dataflow, model=model)
    assert isinstance(config, CoreTrainConfig) and config.steps_per_epoch == len(dataflow)
    assert (config.nr_tower, config.tower, config.predict_tower, config.towers_given) == (1, [0], [0], False)
    config = TrainConfig(dataflow=dataflow, model=model, nr_tower=2)
    assert (config.nr_tower, config.tower, config.towers_given) == (2, [0, 1], True)
    config = TrainConfig(dataflow=dataflow, model=model, tower=[1, 3], predict_tower=-1)
    assert (config.nr_tower, config.tower, config.predict_tower) == (2, [1, 3], [-1])
    with pytest.raises(ValueError, match="nr_tower=3 disagrees with tower"):
        TrainConfig(dataflow=dataflow, model=model, nr_tower=3, tower=[0])
    with pytest.raises(ValueError, match="tower=.*list of GPU ids"):
        TrainConfig(dataflow=dataflow, model=model, tower=[-1])
    with pytest.raises(ValueError, match="duplicate"):
        TrainConfig(dataflow=dataflow, model=model, predict_tower=[0, 0])
    with pytest.raises(ValueError, match="at least one tower"):
        TrainConfig(dataflow=dataflow, model=model, nr_tower=0)
    with pytest.raises(TypeError, match=r"unexpected arguments \['max_epochs'\]"):  # the core's checks
        TrainConfig(dataflow=dataflow, model=model, max_epochs=3)


def test_auto_resume_takes_the_older_arguments_too(model, dataflow, logger_dir):
    config = AutoResumeTrainConfig(dataflow=dataflow, model=model, nr_tower=2)
    assert isinstance(config, CoreAutoResumeTrainConfig) and isinstance(config, TrainConfig)
    assert (config.tower, config.resumed_from) == ([0, 1], None)


def test_the_tower_count_must_match_the_trainer(model, make_df):
    """Through the core's hook ``TrainConfig._check_trainer``, which ``launch_train_with_config`` calls."""
    config = TrainConfig(dataflow=make_df(2), model=model, nr_tower=2, **quiet())
    trainer = SimpleTrainer()
    with pytest.raises(ValueError, match=r"asks for 2 training towers.*SimpleTrainer trains 1.*"
                                         r"SyncMultiGPUTrainerReplicated\(\[0, 1\]\)"):
        launch_train_with_config(config, trainer)
    assert trainer.train_op is None
    # the older form's explicit single tower is fine
    trainer = SimpleTrainer()
    launch_train_with_config(TrainConfig(dataflow=make_df(2), model=model, tower=[0], max_epoch=1, **quiet()),
                             trainer)
    assert trainer.global_step == 2


def test_tf1_session_arguments_name_runtime_config(model, dataflow):
    with pytest.raises(TypeError, match="RuntimeConfig"):
        TrainConfig(dataflow=dataflow, model=model, session_config=tf.compat.v1.ConfigProto())
    with pytest.raises(TypeError, match="RuntimeConfig"):
        TrainConfig(dataflow=dataflow, model=model, session_creator=object())
    # passing them as None is what tensorpack's defaults did: accepted
    TrainConfig(dataflow=dataflow, model=model, session_config=None, session_creator=None)


def test_runtime_config_from_proto():
    proto = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=4, inter_op_parallelism_threads=2,
                                     allow_soft_placement=True, device_count={"CPU": 2})
    proto.gpu_options.allow_growth = True
    proto.gpu_options.visible_device_list = "1,0"
    proto.graph_options.optimizer_options.global_jit_level = tf.compat.v1.OptimizerOptions.ON_1
    assert runtime_config_from_proto(proto) == RuntimeConfig(
        intra_op_threads=4, inter_op_threads=2, soft_placement=True, gpu_memory_growth=True, xla=True,
        logical_cpu_devices=2, visible_gpus=(1, 0))
    proto = tf.compat.v1.ConfigProto()
    proto.graph_options.optimizer_options.global_jit_level = tf.compat.v1.OptimizerOptions.OFF
    assert runtime_config_from_proto(proto) == RuntimeConfig(
        soft_placement=False, gpu_memory_growth=False, xla=False)
    with pytest.raises(TypeError, match="ConfigProto"):
        runtime_config_from_proto({"allow_soft_placement": True})


def test_reject_session_args():
    reject_session_args(session_config=None, session_creator=None, anything_else=1)  # nothing given
    proto = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=3, allow_soft_placement=True)
    with pytest.raises(TypeError, match="session_config=.*RuntimeConfig") as err:
        reject_session_args(session_config=proto, session_creator=None)
    message = str(err.value)
    assert "allow_soft_placement -> soft_placement" in message
    assert "gpu_options.allow_growth -> gpu_memory_growth" in message
    assert "RuntimeConfig(intra_op_threads=3," in message  # the translation of this proto
    with pytest.raises(TypeError, match="session_config=.*RuntimeConfig") as err:
        reject_session_args(session_config=object())
    assert "For this ConfigProto" not in str(err.value)
    with pytest.raises(TypeError, match="session_creator=.*RuntimeConfig.*session_init"):
        reject_session_args(session_creator=object())


def test_get_sessinit_resume_resumes_the_latest_checkpoint(model, make_df, logger_dir):
    """tensorpack's helper (the core's form: ``CheckpointInit(AutoResumeTrainConfig.find_checkpoint(),
    resume=True)``)."""
    from trainstack.callbacks import ModelSaver
    from trainstack.towers import CheckpointInit

    assert AutoResumeTrainConfig.get_sessinit_resume() is None
    launch_train_with_config(TrainConfig(dataflow=make_df(2), model=model, max_epoch=1, callbacks=[ModelSaver()],
                                         **quiet()), SimpleTrainer())
    init = AutoResumeTrainConfig.get_sessinit_resume()
    assert type(init) is CheckpointInit and init.resume
    assert init.path == CoreAutoResumeTrainConfig.find_checkpoint(logger_dir)
