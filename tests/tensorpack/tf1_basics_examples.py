"""tensorpack's examples/basics/mnist-convnet.py and examples/basics/cifar-convnet.py (tensorpack master,
1547a54), their ``Model`` classes copied as written: only the imports differ (trainstack's names for
``from tensorpack import *``, ``tfv1 as tf``, ``tensorpack.tfutils.summary``). Trained by
tests/tensorpack/test_tf1_basics_examples.py, in-process and in the multi-device worker (see multigpu_cases.py),
on tiny fake data."""
from __future__ import annotations

import types

import numpy as np

from trainstack.callbacks import ModelSaver, ScheduledHyperParamSetter, add_moving_summary
from trainstack.loop import Callback
from trainstack.tensorpack.tf1 import (
    BatchNorm,
    BNReLU,
    Conv2D,
    LinearWrap,
    MaxPooling,
    ModelDesc,
    SimpleTrainer,
    SyncMultiGPUTrainerReplicated,
    add_param_summary,
    argscope,
    get_global_step_var,
    l2_regularizer,
    regularize_cost,
)
from trainstack.tensorpack.tf1 import tfv1 as tf
from trainstack.towers import TrainConfig, launch_train_with_config

# tensorpack.tfutils.summary, as mnist-convnet.py imports it
summary = types.SimpleNamespace(add_moving_summary=add_moving_summary, add_param_summary=add_param_summary)

IMAGE_SIZE = 28


# ---- examples/basics/mnist-convnet.py, class Model, as written ---------------------------------------------
class MnistModel(ModelDesc):
    # See tutorial at https://tensorpack.readthedocs.io/tutorial/training-interface.html#with-modeldesc-and-trainconfig
    def inputs(self):
        """
        Define all the inputs (with type, shape, name) that the graph will need.
        """
        return [tf.TensorSpec((None, IMAGE_SIZE, IMAGE_SIZE), tf.float32, 'input'),
                tf.TensorSpec((None,), tf.int32, 'label')]

    def build_graph(self, image, label):
        """This function should build the model which takes the input variables (defined above)
        and return cost at the end."""

        # In tensorflow, inputs to convolution function are assumed to be
        # NHWC. Add a single channel here.
        image = tf.expand_dims(image, 3)

        image = image * 2 - 1   # center the pixels values at zero
        # The context manager `argscope` sets the default option for all the layers under
        # this context. Here we use 32 channel convolution with shape 3x3
        # See tutorial at https://tensorpack.readthedocs.io/tutorial/symbolic.html
        with argscope(Conv2D, kernel_size=3, activation=tf.nn.relu, filters=32):
            # LinearWrap is just a syntax sugar.
            # See tutorial at https://tensorpack.readthedocs.io/tutorial/symbolic.html
            logits = (LinearWrap(image)
                      .Conv2D('conv0')
                      .MaxPooling('pool0', 2)
                      .Conv2D('conv1')
                      .Conv2D('conv2')
                      .MaxPooling('pool1', 2)
                      .Conv2D('conv3')
                      .FullyConnected('fc0', 512, activation=tf.nn.relu)
                      .Dropout('dropout', rate=0.5)
                      .FullyConnected('fc1', 10, activation=tf.identity)())

        # a vector of length B with loss of each sample
        cost = tf.nn.sparse_softmax_cross_entropy_with_logits(logits=logits, labels=label)
        cost = tf.reduce_mean(cost, name='cross_entropy_loss')  # the average cross-entropy loss

        correct = tf.cast(tf.nn.in_top_k(predictions=logits, targets=label, k=1), tf.float32, name='correct')
        accuracy = tf.reduce_mean(correct, name='accuracy')

        # This will monitor training error & accuracy (in a moving average fashion). The value will be automatically
        # 1. written to tensosrboard
        # 2. written to stat.json
        # 3. printed after each epoch
        # You can also just call `tf.summary.scalar`. But moving summary has some other benefits.
        # See tutorial at https://tensorpack.readthedocs.io/tutorial/summary.html
        train_error = tf.reduce_mean(1 - correct, name='train_error')
        summary.add_moving_summary(train_error, accuracy)

        # Use a regex to find parameters to apply weight decay.
        # Here we apply a weight decay on all W (weight matrix) of all fc layers
        # If you don't like regex, you can certainly define the cost in any other methods.
        wd_cost = tf.multiply(1e-5,
                              regularize_cost('fc.*/W', tf.nn.l2_loss),
                              name='regularize_loss')
        total_cost = tf.add_n([wd_cost, cost], name='total_cost')
        summary.add_moving_summary(cost, wd_cost, total_cost)

        # monitor histogram of all weight (of conv and fc layers) in tensorboard
        summary.add_param_summary(('.*/W', ['histogram', 'rms']))
        # the function should return the total cost to be optimized
        return total_cost

    def optimizer(self):
        lr = tf.train.exponential_decay(
            learning_rate=1e-3,
            global_step=get_global_step_var(),
            decay_steps=468 * 10,
            decay_rate=0.3, staircase=True, name='learning_rate')
        # This will also put the summary in tensorboard, stat.json and print in terminal,
        # but this time without moving average
        tf.summary.scalar('lr', lr)
        return tf.train.AdamOptimizer(lr)


# ---- examples/basics/cifar-convnet.py, class Model, as written ---------------------------------------------
class CifarModel(ModelDesc):
    def __init__(self, cifar_classnum):
        super().__init__()
        self.cifar_classnum = cifar_classnum

    def inputs(self):
        return [tf.TensorSpec((None, 30, 30, 3), tf.float32, 'input'),
                tf.TensorSpec((None,), tf.int32, 'label')]

    def build_graph(self, image, label):
        drop_rate = tf.constant(0.5 if self.training else 0.0)

        if self.training:
            tf.summary.image("train_image", image, 10)
        if tf.test.is_gpu_available():
            image = tf.transpose(image, [0, 3, 1, 2])
            data_format = 'channels_first'
        else:
            data_format = 'channels_last'

        image = image / 4.0     # just to make range smaller
        with argscope(Conv2D, activation=BNReLU, use_bias=False, kernel_size=3), \
                argscope([Conv2D, MaxPooling, BatchNorm], data_format=data_format):
            logits = LinearWrap(image) \
                .Conv2D('conv1.1', filters=64) \
                .Conv2D('conv1.2', filters=64) \
                .MaxPooling('pool1', 3, stride=2, padding='SAME') \
                .Conv2D('conv2.1', filters=128) \
                .Conv2D('conv2.2', filters=128) \
                .MaxPooling('pool2', 3, stride=2, padding='SAME') \
                .Conv2D('conv3.1', filters=128, padding='VALID') \
                .Conv2D('conv3.2', filters=128, padding='VALID') \
                .FullyConnected('fc0', 1024 + 512, activation=tf.nn.relu) \
                .Dropout(rate=drop_rate) \
                .FullyConnected('fc1', 512, activation=tf.nn.relu) \
                .FullyConnected('linear', out_dim=self.cifar_classnum)()

        cost = tf.nn.sparse_softmax_cross_entropy_with_logits(logits=logits, labels=label)
        cost = tf.reduce_mean(cost, name='cross_entropy_loss')

        correct = tf.cast(tf.nn.in_top_k(predictions=logits, targets=label, k=1), tf.float32, name='correct')
        # monitor training error
        add_moving_summary(tf.reduce_mean(correct, name='accuracy'))

        # weight decay on all W of fc layers
        wd_cost = regularize_cost('fc.*/W', l2_regularizer(4e-4), name='regularize_loss')
        add_moving_summary(cost, wd_cost)

        add_param_summary(('.*/W', ['histogram']))   # monitor W
        return tf.add_n([cost, wd_cost], name='cost')

    def optimizer(self):
        lr = tf.get_variable('learning_rate', initializer=1e-2, trainable=False)
        tf.summary.scalar('lr', lr)
        return tf.train.AdamOptimizer(lr, epsilon=1e-3)


# ---- the training -------------------------------------------------------------------------------------------
MNIST_NAMES = [f"{layer}/{p}" for layer in ("conv0", "conv1", "conv2", "conv3", "fc0", "fc1") for p in "Wb"]
CIFAR_NAMES = [name for layer in ("conv1.1", "conv1.2", "conv2.1", "conv2.2", "conv3.1", "conv3.2")
               for name in (f"{layer}/W", f"{layer}/bn/gamma", f"{layer}/bn/beta", f"{layer}/bn/mean/EMA",
                            f"{layer}/bn/variance/EMA")] + [f"{layer}/{p}" for layer in ("fc0", "fc1", "linear")
                                                            for p in "Wb"]


STEPS = 4


def fake_batches(kind: str, n: int, batch: int = 4, seed: int = 0) -> list:
    """``n`` batches of tiny fake images whose label shifts their mean (learnable)."""
    rng = np.random.default_rng(seed)
    shape = (IMAGE_SIZE, IMAGE_SIZE) if kind == "mnist" else (30, 30, 3)
    out = []
    for _ in range(n):
        label = rng.integers(0, 3, size=batch).astype("int32")
        image = (rng.uniform(size=(batch, *shape)) * 0.5 + 0.25 * label.reshape(-1, *[1] * len(shape)))
        out.append((image.astype("float32"), label))
    return out


class CostRecorder(Callback):
    """The cost of every step."""

    def __init__(self, name: str):
        self.name, self.costs = name, []

    def _before_run(self, ctx):
        return [self.name]

    def _after_run(self, ctx, values):
        self.costs.append(float(values.results[0]))


def train(kind: str, towers: int, checkpoint_dir: str, steps: int = STEPS) -> tuple[list, list, list]:
    """(the cost of each step, the model's variable names, the checkpoint's keys) of ``steps`` steps of the
    example's model on the same 1 batch per tower, as SimpleTrainer (1 tower) or SyncMultiGPUTrainerReplicated."""
    model = MnistModel() if kind == "mnist" else CifarModel(3)
    recorder = CostRecorder("total_cost" if kind == "mnist" else "cost")
    callbacks = [recorder, ModelSaver(checkpoint_dir=checkpoint_dir)]
    if kind == "cifar":  # the script's StatMonitorParamSetter lowers this variable; on 4 images, from the start
        callbacks.append(ScheduledHyperParamSetter("learning_rate", [(0, 1e-3)]))
    trainer = SimpleTrainer() if towers == 1 else SyncMultiGPUTrainerReplicated(towers)
    launch_train_with_config(TrainConfig(model=model, dataflow=fake_batches(kind, towers) * steps,
                                         max_epoch=1, steps_per_epoch=steps, monitors=[],
                                         callbacks=callbacks), trainer)
    import tensorflow  # noqa: PLC0415

    names = [v.name.split(":")[0] for v in trainer.tower_func.variables]
    keys = [k for k, _ in tensorflow.train.list_variables(checkpoint_dir)]
    return recorder.costs, names, keys


def two_towers_case(devices, kind: str, checkpoint_dir: str):
    """``train(kind, 2, ...)`` in the multi-device worker."""
    return train(kind, 2, checkpoint_dir)
