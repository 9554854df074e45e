"""The older API of the 003 documents: a trainer built from a TrainConfig, then ``train()``."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import tensorflow as tf

from trainstack.inputs import FeedInput, QueueInput
from trainstack.tensorpack.tf1 import (
    FeedfreeTrainerBase,
    QueueInputTrainer,
    SimpleFeedfreeTrainer,
    SimpleTrainer,
    SingleCostFeedfreeTrainer,
    TrainConfig,
    legacy_get_predictor,
)
from trainstack.tensorpack.tf1.legacy.compat import train_legacy


def config_of(model, df, **kwargs):
    kwargs.setdefault("max_epoch", 2)
    return TrainConfig(model=model, extra_callbacks=[], monitors=[], **({"dataflow": df} | kwargs))


def test_simple_trainer_from_config_trains_and_warns(model, make_df):
    config = config_of(model, make_df(4))
    with pytest.warns(DeprecationWarning,
                      match=r"SimpleTrainer\(config\) is the older .*"
                            r"launch_train_with_config\(config, SimpleTrainer\(\)\)") as record:
        trainer = SimpleTrainer(config)
    assert record[0].filename == __file__  # attributed to the caller's line
    assert trainer.config is config
    assert not model.fc.built  # the graph is built by train(), as the older trainers did
    trainer.train()
    assert model.fc.built
    assert type(trainer.input) is FeedInput  # the older SimpleTrainer fed its dataflow
    assert (trainer.epoch_num, trainer.global_step) == (2, 8)


def test_queue_input_trainer_from_config(model, make_df):
    config = config_of(model, make_df(3))
    with pytest.warns(DeprecationWarning,
                      match=r"launch_train_with_config\(config, QueueInputTrainer\(\)\)"):
        trainer = QueueInputTrainer(config, input_queue=8)
    trainer.train()
    assert type(trainer.input) is QueueInput and trainer.input.queue_size == 8
    assert trainer.global_step == 6


@pytest.mark.parametrize("cls", [FeedfreeTrainerBase, SingleCostFeedfreeTrainer, SimpleFeedfreeTrainer])
def test_feedfree_trainers(cls, model, make_df):
    source = QueueInput(make_df(3))
    with pytest.warns(DeprecationWarning, match=rf"{cls.__name__}\(config\).*SimpleTrainer\(\)"):
        trainer = cls(config_of(model, None, data=source))
    assert isinstance(trainer, SimpleTrainer)
    trainer.train()
    assert trainer.input is source and trainer.global_step == 6


def test_feedfree_trainers_need_a_feedfree_input(model, make_df):
    with pytest.raises(TypeError, match="FeedfreeInput.*dataflow=list.*QueueInputTrainer"):
        SimpleFeedfreeTrainer(config_of(model, make_df(2)))
    with pytest.raises(TypeError, match="FeedfreeInput.*data=FeedInput"):
        SingleCostFeedfreeTrainer(config_of(model, None, data=FeedInput(make_df(2))))
    with pytest.raises(TypeError, match="takes a TrainConfig"):
        FeedfreeTrainerBase(None)


def test_bad_legacy_configs(model, make_df):
    with pytest.raises(TypeError, match=r"config must be a TrainConfig.*launch_train_with_config"):
        SimpleTrainer({"model": model})
    with pytest.raises(ValueError, match="has no model"):
        SimpleTrainer(TrainConfig(dataflow=make_df(2)))


def test_several_towers_need_a_multi_gpu_trainer(model, make_df):
    with pytest.raises(ValueError, match=r"asks for 2 training towers \(tower=\[0, 1\]\) but "
                                         r"SimpleTrainer trains 1.*SyncMultiGPUTrainerReplicated"):
        SimpleTrainer(config_of(model, make_df(2), nr_tower=2))


def test_train_legacy_needs_a_bound_config():
    with pytest.raises(RuntimeError,
                       match=r"older form and needs a trainer built as SimpleTrainer\(config\)"):
        train_legacy(SimpleTrainer())


def test_each_use_warns(model, make_df):
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        SimpleTrainer(config_of(model, make_df(2)))
        SimpleTrainer(config_of(type(model)(), make_df(2)))
    assert [w.category for w in record] == [DeprecationWarning, DeprecationWarning]


def test_legacy_get_predictor_uses_predict_tower(model, make_df):
    df = make_df(2)
    with pytest.warns(DeprecationWarning):
        trainer = SimpleTrainer(config_of(model, df, max_epoch=1, predict_tower=[-1]))
    trainer.train()
    x = df[0][0]
    expected = x @ model.fc.kernel.numpy() + model.fc.bias.numpy()
    cpu = legacy_get_predictor(trainer, ["x"], ["logits"], tower=0)
    assert cpu.device == "/device:CPU:0"
    np.testing.assert_allclose(cpu(x)[0], expected, rtol=1e-5, atol=1e-5)
    with pytest.raises(IndexError, match=r"tower=1 is not a prediction tower.*\[-1\]"):
        legacy_get_predictor(trainer, ["x"], ["logits"], tower=1)

    with pytest.warns(DeprecationWarning):
        trainer = SimpleTrainer(config_of(type(model)(), df, max_epoch=1))
    trainer.train()
    first = legacy_get_predictor(trainer, ["x"], ["logits"])
    assert first is trainer.get_predictor(["x"], ["logits"], device=0)


def test_queue_input_trainer_queues_a_dataflow_or_a_feed_input(model, dataflow, setup):
    """tensorpack's QueueInputTrainer (the core's trainers take a ``QueueInput(dataflow)`` instead): a
    dataflow or a FeedInput goes through a QueueInput of ``input_queue`` elements, and it trains."""
    trainer = setup(QueueInputTrainer(input_queue=4), model, FeedInput(dataflow))
    assert isinstance(trainer.input, QueueInput) and trainer.input.queue_size == 4
    with pytest.raises(TypeError, match="capacity"):
        QueueInputTrainer(input_queue=tf.queue.FIFOQueue(3, [tf.float32]))
    trainer = setup(QueueInputTrainer(), model, dataflow)
    assert type(trainer.input) is QueueInput and trainer.input.size() == len(dataflow)
    trainer.train_with_defaults(steps_per_epoch=10, max_epoch=3, extra_callbacks=[], monitors=[])
    assert int(trainer.optimizer.iterations.numpy()) == 30
