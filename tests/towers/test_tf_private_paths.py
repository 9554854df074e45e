"""Training takes no fallback of trainstack.callbacks.tf_private on this TensorFlow: the step's flat
call, its asynchronous executor (a FeedInput's overlap), the host tensors and the Keras internals
are the fast paths, not the slow ones a TensorFlow upgrade would silently switch to."""
from __future__ import annotations

import keras
import tensorflow as tf

from trainstack.callbacks import tf_private
from trainstack.towers import ModelDesc, SimpleTrainer, TrainConfig, launch_train_with_config


class DropoutModel(ModelDesc):
    """A Dense layer behind a Dropout: its SeedGenerator goes into the checkpoint (rng)."""

    def __init__(self):
        self.drop = keras.layers.Dropout(0.2, seed=1)
        self.fc = keras.layers.Dense(2)

    def inputs(self):
        return [tf.TensorSpec([None, 4], tf.float32, "x"), tf.TensorSpec([None], tf.int32, "label")]

    def build_graph(self, x, label):
        logits = self.fc(self.drop(x, training=True))
        return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=label, logits=logits),
                              name="cost")

    def optimizer(self):
        return keras.optimizers.SGD(0.1)


def test_training_with_a_feed_input_takes_no_fallback(make_df):
    tf_private.reset_fallbacks()
    trainer = SimpleTrainer()  # feeds its dataflow: host tensors, the flat call, the overlapped executor
    launch_train_with_config(TrainConfig(model=DropoutModel(), dataflow=make_df(6), steps_per_epoch=6,
                                         max_epoch=2, callbacks=[], monitors=[]), trainer)
    assert trainer.loop.global_step == 12
    assert "rng" in trainer.checkpoint_objects  # the Dropout's generator was found
    assert tf_private.fallbacks_taken() == {}, tf_private.fallbacks_taken()
