"""tensorpack's examples/basics/mnist-convnet.py model code, as written, under `from trainstack.tensorpack import *`
(tests/tensorpack/test_tf1_basics_examples.py trains it and cifar-convnet.py single and 2-tower)."""
from __future__ import annotations

import numpy as np

from trainstack.tensorpack import *  # noqa: E402,F403 - what the ported script writes for `from tensorpack import *`
from trainstack.tensorpack import tfv1 as tf  # noqa: E402 - `from tensorpack import tfv1 as tf`
from trainstack.tensorpack.tfutils import summary  # noqa: E402 - `from tensorpack.tfutils import summary`

IMAGE_SIZE = 28


class Model(ModelDesc):  # noqa: F405 - examples/basics/mnist-convnet.py (tensorpack 1547a54), as written
    def inputs(self):
        return [tf.TensorSpec((None, IMAGE_SIZE, IMAGE_SIZE), tf.float32, 'input'),
                tf.TensorSpec((None,), tf.int32, 'label')]

    def build_graph(self, image, label):
        image = tf.expand_dims(image, 3)

        image = image * 2 - 1   # center the pixels values at zero
        with argscope(Conv2D, kernel_size=3, activation=tf.nn.relu, filters=32):  # noqa: F405
            logits = (LinearWrap(image)  # noqa: F405
                      .Conv2D('conv0')
                      .MaxPooling('pool0', 2)
                      .Conv2D('conv1')
                      .Conv2D('conv2')
                      .MaxPooling('pool1', 2)
                      .Conv2D('conv3')
                      .FullyConnected('fc0', 512, activation=tf.nn.relu)
                      .Dropout('dropout', rate=0.5)
                      .FullyConnected('fc1', 10, activation=tf.identity)())

        cost = tf.nn.sparse_softmax_cross_entropy_with_logits(logits=logits, labels=label)
        cost = tf.reduce_mean(cost, name='cross_entropy_loss')  # the average cross-entropy loss

        correct = tf.cast(tf.nn.in_top_k(predictions=logits, targets=label, k=1), tf.float32, name='correct')
        accuracy = tf.reduce_mean(correct, name='accuracy')

        train_error = tf.reduce_mean(1 - correct, name='train_error')
        summary.add_moving_summary(train_error, accuracy)

        wd_cost = tf.multiply(1e-5,
                              regularize_cost('fc.*/W', tf.nn.l2_loss),  # noqa: F405
                              name='regularize_loss')
        total_cost = tf.add_n([wd_cost, cost], name='total_cost')
        summary.add_moving_summary(cost, wd_cost, total_cost)

        summary.add_param_summary(('.*/W', ['histogram', 'rms']))
        return total_cost

    def optimizer(self):
        lr = tf.train.exponential_decay(
            learning_rate=1e-3,
            global_step=get_global_step_var(),  # noqa: F405
            decay_steps=468 * 10,
            decay_rate=0.3, staircase=True, name='learning_rate')
        tf.summary.scalar('lr', lr)
        return tf.train.AdamOptimizer(lr)


def test_mnist_convnet_trains_under_from_trainstack_import_star(tmp_path):
    rng = np.random.default_rng(0)
    label = rng.integers(0, 10, size=4).astype("int32")
    image = (rng.uniform(size=(4, IMAGE_SIZE, IMAGE_SIZE)) * 0.5 + 0.05 * label[:, None, None]).astype("float32")
    trainer = SimpleTrainer()  # noqa: F405
    launch_train_with_config(TrainConfig(  # noqa: F405
        model=Model(), dataflow=[(image, label)] * 2, max_epoch=1, steps_per_epoch=2,
        callbacks=[ModelSaver(checkpoint_dir=str(tmp_path))]), trainer)  # noqa: F405
    names = [f"{layer}/{p}" for layer in ("conv0", "conv1", "conv2", "conv3", "fc0", "fc1") for p in "Wb"]
    assert [v.name.split(":")[0] for v in trainer.tower_func.variables] == names
    keys = {k for k, _ in tf.train.list_variables(str(tmp_path)) if k.startswith("model/")}
    assert keys == {f"model/untracked/{n.replace('/', '.S')}/.ATTRIBUTES/VARIABLE_VALUE" for n in names}
    assert np.isfinite(trainer.monitors.get_latest("total_cost"))
    assert trainer.monitors.get_latest("param-summary/fc0/W-rms") > 0
