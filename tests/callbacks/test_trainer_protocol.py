"""The callbacks reach a trainer's model members through one declared Protocol, not getattr."""
from __future__ import annotations

import pytest
import tensorflow as tf

from trainstack.callbacks import ModelTrainer, SummaryCollection, TFVariableParam, declares
from trainstack.loop import Trainer


class BeforeSetup(Trainer):
    """A trainer whose checkpoint_objects exist only after its graph is built, as the towers' do."""

    @property
    def checkpoint_objects(self):
        raise RuntimeError("checkpoint_objects exists after setup_graph()")


def test_declares_looks_members_up_without_running_them():
    trainer = BeforeSetup()
    assert declares(trainer, "checkpoint_objects")  # the property is not run: no RuntimeError
    assert not declares(trainer, "optimizer") and not declares(Trainer(), "checkpoint_objects")
    trainer.optimizer = object()  # an instance attribute declares it too
    assert declares(trainer, "optimizer")
    with pytest.raises(ValueError, match=r"'monitors' is not a ModelTrainer member; they are \['checkpoint_objects'"):
        declares(trainer, "monitors")
    assert {"checkpoint_objects", "optimizer", "summary_collection"} <= set(vars(ModelTrainer))


def test_a_variable_set_by_name_is_found_through_the_declared_member():
    class WithObjects(Trainer):
        def __init__(self):
            super().__init__()
            self.lr = tf.Variable(0.1, name="lr")
            self.summary_collection = SummaryCollection("mine")

        @property
        def checkpoint_objects(self):
            return {"lr": self.lr}

    trainer = WithObjects()
    param = TFVariableParam("lr")
    param.setup(trainer)
    param.set_value(0.25)
    assert trainer.lr.numpy() == pytest.approx(0.25)
    with pytest.raises(LookupError, match="Trainer has no checkpoint_objects dict"):
        TFVariableParam("lr").setup(Trainer())
