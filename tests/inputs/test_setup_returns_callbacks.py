"""tensorpack's InputSource contract: ``setup()`` returns the source's callbacks."""
from __future__ import annotations

import numpy as np
import tensorflow as tf

from trainstack.inputs import FeedInput, QueueInput
from trainstack.loop import Callback, Trainer

SIG = [tf.TensorSpec([None, 2], tf.float32, name="x")]


class Flow:
    def __init__(self):
        self.resets = 0

    def __len__(self):
        return 2

    def __iter__(self):
        return iter([(np.zeros((1, 2), "float32"),)] * 2)

    def reset_state(self):
        self.resets += 1


def test_setup_returns_the_callbacks_get_callbacks_gives():
    for source in (FeedInput(Flow()), QueueInput(Flow())):
        cbs = source.setup(SIG)
        assert cbs and all(isinstance(cb, Callback) for cb in cbs)
        # the same callbacks, so registering either (or both) adds them once
        assert [id(c) for c in cbs] == [id(c) for c in source.get_callbacks()]


def test_register_callback_of_setup_resets_the_dataflow_once():
    flow = Flow()
    source = FeedInput(flow)
    trainer = Trainer()
    trainer.register_callback(source.setup(SIG))      # tensorpack's custom-trainer line
    trainer.register_callback(source.get_callbacks())  # and again: not registered twice
    trainer.train_op = lambda **feeds: None          # a FeedInput's callbacks feed the step
    trainer.train([], [], steps_per_epoch=1, max_epoch=1)
    assert flow.resets == 1
