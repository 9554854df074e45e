"""tensorpack's GAN trainer (``GANModelDesc`` and ``GANTrainer`` of the verbatim
``tests/tensorpack/examples/GAN/GAN.py``, ported by the port command) with a small GAN, and the
same training written by hand with ``tf.GradientTape`` (test_tf1_gan_multitower.py).

A plain module (not a test file): the multi-device case runs in multigpu_cases.py's worker,
which imports it by name. Each case takes the device names first when run there.
"""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np

BATCH = 8
NOISE = 3
SEED = 0


def _tf():
    import tensorflow as tf

    return tf


# -- the model and the trainer: tensorpack's examples/GAN/GAN.py, ported --------------------------------
GAN_PY = Path(__file__).parent / "examples" / "GAN" / "GAN.py"


@functools.cache
def ported_gan() -> dict:
    """The namespace of tensorpack's ``examples/GAN/GAN.py`` (verbatim, tensorpack 1547a54), ported by
    the port command (its import lines only) and run as a module: ``GANModelDesc``, ``GANTrainer``,
    ``SeparateGANTrainer``, ..."""
    from trainstack.tensorpack.port import port_source

    source, _ = port_source(GAN_PY.read_text(), str(GAN_PY))
    namespace = {"__name__": "ported_GAN", "__file__": str(GAN_PY)}
    exec(compile(source, str(GAN_PY), "exec"), namespace)  # noqa: S102 - the example as its user runs it
    return namespace


def _device_choice(devices: Any) -> Any:
    """What GAN.py's ``LeastLoadedDeviceSetter('/gpu:k', raw_devices)`` stands for on the test
    machine: tower k's device, ``devices[k]``, or (None) the data-parallel trainers' placement,
    ``/device:GPU:k``, else ``/device:CPU:k``. tensorpack's device function placed TF1 variables;
    in TensorFlow 2 the first tower creates them, so the tower's device is what it chose."""
    tf = _tf()

    def choose(worker_device: str, ps_devices: Any) -> str:
        k = int(worker_device.rsplit(":", 1)[1])
        if devices is not None:
            return devices[k]
        return f"/device:{'GPU' if tf.config.get_visible_devices('GPU') else 'CPU'}:{k}"

    return choose


def _classes():
    import keras
    import tensorflow as tf

    gan = ported_gan()

    class Model(gan["GANModelDesc"]):
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
            self.collect_variables()   # GAN.py's: the trainable variables under the scopes gen and discrim

        def optimizer(self):
            return keras.optimizers.Adam(1e-2, beta_1=0.5)

    def GANTrainer(input, model, num_gpu=1, devices=None):  # noqa: N802 - the class, with its devices
        """GAN.py's ``GANTrainer(input, model, num_gpu)``, its towers on ``devices`` (see
        :func:`_device_choice`)."""
        gan["LeastLoadedDeviceSetter"] = _device_choice(devices)
        return gan["GANTrainer"](input, model, num_gpu)

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
    # GAN.py's collect_variables selected, by scope, the tf.Variables behind each network's Keras weights
    assert {id(v) for v in model.g_vars} == {id(v.value) for v in model.gen.trainable_variables}
    assert {id(v) for v in model.d_vars} == {id(v.value) for v in model.discrim.trainable_variables}
    own = model.gen.trainable_variables + model.discrim.trainable_variables
    start = [v.numpy().copy() for v in own]

    reference = __getattr__("Model")()
    _losses(reference, *data.batches[0])  # creates its variables
    reference_vars = reference.gen.trainable_variables + reference.discrim.trainable_variables
    for v, value in zip(reference_vars, start):
        v.assign(value)

    trainer.train_with_defaults(callbacks=[], monitors=[], steps_per_epoch=steps, max_epoch=1)
    _by_hand(reference, data.batches, num_gpu, steps)
    trained = [v.numpy() for v in own]
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
            "input": type(trainer.input).__name__,
            "tower_devices": [d[0] if len(d) == 1 else d for d in tower_devices]}


def _short(device: str) -> str:
    return "/" + device.split("/", 4)[-1] if device.startswith("/job:") else device
