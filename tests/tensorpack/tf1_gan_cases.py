"""tensorpack's GAN trainer and a small GAN, as a ported tensorpack script writes them, and the
same training written by hand with ``tf.GradientTape`` (test_tf1_gan_multitower.py).

A plain module (not a test file): the multi-device case runs in multigpu_cases.py's worker,
which imports it by name. Each case takes the device names first when run there.
"""
from __future__ import annotations

import functools
from typing import Any

import numpy as np

BATCH = 8
NOISE = 3
SEED = 0


def _tf():
    import tensorflow as tf

    return tf


# -- the model: tensorpack's GANModelDesc, ported --------------------------------------------------
def _classes():
    import keras
    import tensorflow as tf

    from trainstack.callbacks import add_moving_summary
    from trainstack.tensorpack.tf1 import (
        DataParallelBuilder,
        ModelDescBase,
        TowerContext,
        TowerFunc,
        TowerTrainer,
    )

    class GANModelDesc(ModelDescBase):
        def collect_variables(self):
            self.g_vars = self.gen.trainable_variables
            self.d_vars = self.discrim.trainable_variables

        def build_losses(self, logits_real, logits_fake):
            with tf.name_scope("GAN_loss"):
                with tf.name_scope("discrim"):
                    d_loss_pos = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(
                        logits=logits_real, labels=tf.ones_like(logits_real)), name='loss_real')
                    d_loss_neg = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(
                        logits=logits_fake, labels=tf.zeros_like(logits_fake)), name='loss_fake')
                    self.d_loss = tf.add(.5 * d_loss_pos, .5 * d_loss_neg, name='loss')
                with tf.name_scope("gen"):
                    self.g_loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(
                        logits=logits_fake, labels=tf.ones_like(logits_fake)), name='loss')
                add_moving_summary(self.g_loss, self.d_loss)

        @functools.cache
        def get_optimizer(self):
            return self.optimizer()

    class Model(GANModelDesc):
        def __init__(self):
            init = keras.initializers.GlorotUniform(seed=SEED)
            self.gen = keras.Sequential([keras.layers.Dense(6, activation="tanh", kernel_initializer=init),
                                         keras.layers.Dense(2, kernel_initializer=init)], name="gen")
            self.discrim = keras.Sequential([keras.layers.Dense(6, activation="tanh", kernel_initializer=init),
                                             keras.layers.Dense(1, kernel_initializer=init)], name="discrim")

        def inputs(self):
            return [tf.TensorSpec((None, 2), tf.float32, 'real'), tf.TensorSpec((None, NOISE), tf.float32, 'z')]

        def build_graph(self, real, z):
            fake = tf.identity(self.gen(z), name='gen')
            self.build_losses(self.discrim(real), self.discrim(fake))
            self.collect_variables()

        def optimizer(self):
            return keras.optimizers.Adam(1e-2, beta_1=0.5)

    # tensorpack 0.11's GANTrainer (examples/GAN/GAN.py), only the imports changed (and
    # ``devices`` passed through, for the test machine; tensorpack used LeastLoadedDeviceSetter)
    class GANTrainer(TowerTrainer):
        def __init__(self, input, model, num_gpu=1, devices=None):
            super().__init__()
            cbs = input.setup(model.get_input_signature())
            self.register_callback(cbs)
            if num_gpu <= 1:
                self._build_gan_trainer(input, model)
            else:
                self._build_multigpu_gan_trainer(input, model, num_gpu, devices)

        def _build_gan_trainer(self, input, model):
            self.tower_func = TowerFunc(model.build_graph, model.inputs())
            with TowerContext('', is_training=True):
                self.tower_func(*input.get_input_tensors())
            opt = model.get_optimizer()
            with tf.name_scope('optimize'):
                g_min = opt.minimize(model.g_loss, var_list=model.g_vars, name='g_op')
                with tf.control_dependencies([g_min]):
                    d_min = opt.minimize(model.d_loss, var_list=model.d_vars, name='d_op')
            self.train_op = d_min

        def _build_multigpu_gan_trainer(self, input, model, num_gpu, devices):
            assert num_gpu > 1

            def get_cost(*inputs):
                model.build_graph(*inputs)
                return [model.d_loss, model.g_loss]

            self.tower_func = TowerFunc(get_cost, model.get_input_signature())
            cost_list = DataParallelBuilder.call_for_each_tower(
                list(range(num_gpu)),
                lambda: self.tower_func(*input.get_input_tensors()),
                devices)
            with tf.name_scope('optimize'):
                d_loss = tf.add_n([x[0] for x in cost_list]) * (1.0 / num_gpu)
                g_loss = tf.add_n([x[1] for x in cost_list]) * (1.0 / num_gpu)
                opt = model.get_optimizer()
                g_min = opt.minimize(g_loss, var_list=model.g_vars,
                                     colocate_gradients_with_ops=True, name='g_op')
                with tf.control_dependencies([g_min]):
                    d_min = opt.minimize(d_loss, var_list=model.d_vars,
                                         colocate_gradients_with_ops=True, name='d_op')
            self.train_op = d_min

    return Model, GANTrainer


def __getattr__(name: str) -> Any:  # Model, GANTrainer: made when first asked (imports TensorFlow)
    if name in ("Model", "GANTrainer"):
        Model, GANTrainer = _classes()
        globals().update(Model=Model, GANTrainer=GANTrainer)
        return globals()[name]
    raise AttributeError(name)


class GANData:
    """``n`` batches (real points around (1, -1), noise z), the same every epoch."""

    def __init__(self, n: int) -> None:
        rng = np.random.default_rng(SEED)
        self.batches = [[(rng.normal(size=(BATCH, 2)) * 0.1 + [1.0, -1.0]).astype(np.float32),
                         rng.uniform(-1, 1, size=(BATCH, NOISE)).astype(np.float32)] for _ in range(n)]

    def __len__(self):
        return len(self.batches)

    def __iter__(self):
        return iter(self.batches)


# -- the oracle: the same training by hand ---------------------------------------------------------
def _losses(model: Any, real: np.ndarray, z: np.ndarray) -> tuple:
    """The discriminator's and the generator's losses, by their formulas (no trainstack)."""
    tf = _tf()
    softplus = tf.math.softplus  # sigmoid cross-entropy: label 1 -> softplus(-x), label 0 -> softplus(x)
    logits_real = model.discrim(tf.constant(real))
    logits_fake = model.discrim(model.gen(tf.constant(z)))
    d_loss = 0.5 * tf.reduce_mean(softplus(-logits_real)) + 0.5 * tf.reduce_mean(softplus(logits_fake))
    g_loss = tf.reduce_mean(softplus(-logits_fake))
    return d_loss, g_loss


def _by_hand(model: Any, batches: list, num_gpu: int, steps: int) -> None:
    """Per step: every tower's losses on its own batch, averaged; g's update, then d's."""
    tf = _tf()
    g_vars, d_vars = model.gen.trainable_variables, model.discrim.trainable_variables
    opt = model.optimizer()
    opt.build(g_vars + d_vars)
    for s in range(steps):
        with tf.GradientTape(persistent=True) as tape:
            losses = [_losses(model, *batches[s * num_gpu + k]) for k in range(num_gpu)]
            d_loss = tf.add_n([d for d, _ in losses]) / num_gpu
            g_loss = tf.add_n([g for _, g in losses]) / num_gpu
        opt.apply_gradients(zip(tape.gradient(g_loss, g_vars), g_vars))
        opt.apply_gradients(zip(tape.gradient(d_loss, d_vars), d_vars))


def compare_with_gradient_tape(worker_devices: list, num_gpu: int, steps: int, devices: Any) -> dict:
    """Train tensorpack's GANTrainer ``steps`` steps and the same GAN by hand from the same
    weights; the largest difference of their weights, how far they moved, the towers' devices."""
    from trainstack.towers import TracedStep

    data = GANData(steps * num_gpu)
    model = __getattr__("Model")()
    from trainstack.tensorpack.input_source import QueueInput

    trainer = __getattr__("GANTrainer")(QueueInput(data), model, num_gpu=num_gpu, devices=devices)
    start = [v.numpy().copy() for v in model.g_vars + model.d_vars]

    reference = __getattr__("Model")()
    _losses(reference, *data.batches[0])  # creates its variables
    reference_vars = reference.gen.trainable_variables + reference.discrim.trainable_variables
    for v, value in zip(reference_vars, start):
        v.assign(value)

    trainer.train_with_defaults(callbacks=[], monitors=[], steps_per_epoch=steps, max_epoch=1)
    _by_hand(reference, data.batches, num_gpu, steps)
    trained = [v.numpy() for v in model.g_vars + model.d_vars]
    expected = [v.numpy() for v in reference_vars]
    step = trainer.train_op.step
    assert isinstance(step, TracedStep)
    graph = step._concrete[()].graph  # the traced step's graph: where its towers' ops were placed
    tower_devices = []
    for k in range(num_gpu):
        ops = [op for op in graph.get_operations() if op.name.startswith(f"tower{k}/") and op.device]
        tower_devices.append(sorted({_short(op.device) for op in ops}))
    return {"steps": trainer.global_step,
            "max_abs": max(float(np.max(np.abs(a - b))) for a, b in zip(trained, expected)),
            "moved": max(float(np.max(np.abs(a - b))) for a, b in zip(trained, start)),
            "iterations": int(model.get_optimizer().iterations.numpy()),
            "tower_devices": [d[0] if len(d) == 1 else d for d in tower_devices]}


def _short(device: str) -> str:
    return "/" + device.split("/", 4)[-1] if device.startswith("/job:") else device
