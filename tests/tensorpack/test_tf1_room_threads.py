"""With trainstack.tensorpack, the TF1 emulation is confined to the thread that traces: while a
tensorpack ModelDesc's tower is traced by the layer's SimpleTrainer (and holds there), a second
thread's ``tf.compat.v1.get_collection`` and ``tf.compat.v1.get_variable`` are TensorFlow's own,
while the tracing thread's are tensorpack's; after training every patched attribute is the original."""
from __future__ import annotations

import threading

import keras
import numpy as np
import tensorflow as tf

from trainstack.tensorpack.tf1 import ModelDesc, SimpleTrainer
from trainstack.tensorpack.tf1.room import PATCHES
from trainstack.towers import TrainConfig, launch_train_with_config

TRAINABLE = tf.compat.v1.GraphKeys.TRAINABLE_VARIABLES


def patched() -> list[object]:
    """Every attribute the room patches, as defined on its owner (a class's own entry)."""
    out = []
    for patch in PATCHES:
        owner = patch.owner()
        out.append(vars(owner).get(patch.name) if isinstance(owner, type) else getattr(owner, patch.name, None))
    return out


class TF1Model(ModelDesc):
    """A tensorpack-style model: a TF1 variable, and the trainable collection read in build_graph."""

    def __init__(self, inside: threading.Event, release: threading.Event) -> None:
        self.inside, self.release = inside, release
        self.seen_in_tower: list[list[str]] = []

    def inputs(self):
        return [tf.TensorSpec([None, 4], tf.float32, "x")]

    def build_graph(self, x):
        w = tf.compat.v1.get_variable("W", shape=[4, 1], initializer=tf.compat.v1.ones_initializer())
        self.seen_in_tower.append([v.name for v in tf.compat.v1.get_collection(TRAINABLE)])
        self.inside.set()
        assert self.release.wait(60)
        return tf.reduce_mean(tf.square(tf.matmul(x, w)), name="cost")

    def optimizer(self):
        return keras.optimizers.SGD(0.01)


def test_a_second_thread_gets_tensorflows_own_tf1_calls_while_a_tower_is_traced():
    before = patched()
    own_collection = tf.compat.v1.get_collection(TRAINABLE)  # TensorFlow's own, eagerly: the default graph's
    inside, release = threading.Event(), threading.Event()
    model = TF1Model(inside, release)
    trainer = SimpleTrainer()
    config = TrainConfig(model=model, dataflow=[(np.ones((2, 4), "float32"),)] * 2, max_epoch=1, monitors=[],
                         callbacks=[])
    errors: list[BaseException] = []

    def train() -> None:
        try:
            launch_train_with_config(config, trainer)
        except BaseException as e:  # noqa: BLE001 - handed to the test
            errors.append(e)
        finally:
            release.set()

    thread = threading.Thread(target=train, daemon=True)
    thread.start()
    try:
        assert inside.wait(120)
        assert patched() != before  # the room's dispatchers are in place while the tower is traced
        # ...and in this thread they call TensorFlow's own functions
        assert tf.compat.v1.get_collection(TRAINABLE) == own_collection
        outside = tf.compat.v1.get_variable("outside_w", shape=[2], initializer=tf.compat.v1.zeros_initializer())
        assert isinstance(outside, tf.Variable) and outside.name == "outside_w:0"
        np.testing.assert_array_equal(outside.numpy(), [0.0, 0.0])  # created now, eagerly: not a tower's
        assert tf.compat.v1.get_collection(TRAINABLE) == own_collection  # and recorded in no tower collection
    finally:
        release.set()
        thread.join(120)
    assert not thread.is_alive() and not errors, errors
    assert trainer.global_step == 2
    # the tracing thread's calls were tensorpack's: the tower's TF1 variable in its collection
    assert model.seen_in_tower and all(names == ["W:0"] or names == ["W"] for names in model.seen_in_tower), \
        model.seen_in_tower
    assert all(new is old for new, old in zip(patched(), before, strict=True))
