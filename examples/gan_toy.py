"""Train a GAN on a 2-D toy distribution with a trainer written for it.

"Write a trainer" (the seeds): a GAN is not single-cost optimization, so
:class:`GANTrainer` subclasses ``TowerTrainer`` and defines its own
iteration. The model (a ``ModelDescBase``) builds both losses in one tower
function; the trainer traces two steps from it, each minimizing one loss with
its own Keras optimizer, and overrides ``run_step`` to run the discriminator
step then the generator step. The discriminator step goes through
``hooked_run``, so callbacks see it (fetches, ``global_step``); the generator
step through ``run``, without hooks. The input is a ``QueueInput`` (in-graph,
no feeds), so both steps can take batches from it.

The real data are a mixture of 8 Gaussians on a ring. After every epoch
:class:`SampleQuality` puts statistics of the generated samples to the
monitors and draws ``samples.png`` in the logger directory: real samples on
the left (blue), generated ones on the right (orange), both on [-3, 3]^2.
The same picture goes to TensorBoard (``samples``).

    python examples/gan_toy.py [--epochs 10] [--steps-per-epoch 300] [--logdir train_log/gan_toy]
"""
from __future__ import annotations

import argparse
import functools
import logging
import os
from collections.abc import Mapping
from typing import Any

import trainstack.callbacks  # noqa: F401 - first: imports TensorFlow without its start-up lines

# isort: split

import keras
import numpy as np
import tensorflow as tf

from trainstack.callbacks import ModelSaver, add_moving_summary, set_logger_dir, summary_collection_scope
from trainstack.inputs import InputSource, QueueInput
from trainstack.loop import Callback
from trainstack.towers import ModelDescBase, TowerContext, TowerFunc, TowerTrainer, TracedStep

logger = logging.getLogger("trainstack.examples")

NUM_MODES = 8
RADIUS = 2.0
MODE_STD = 0.05
MODES = RADIUS * np.stack([np.cos(2 * np.pi * np.arange(NUM_MODES) / NUM_MODES),
                           np.sin(2 * np.pi * np.arange(NUM_MODES) / NUM_MODES)], axis=1).astype(np.float32)


# -- data -------------------------------------------------------------------------------------------
def sample_real(rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` points of the ring mixture: a random mode plus Gaussian noise."""
    modes = MODES[rng.integers(0, NUM_MODES, n)]
    return (modes + MODE_STD * rng.normal(size=(n, 2))).astype(np.float32)


class RingWithNoise:
    """A dataflow of ``[real, z]`` batches: samples of the ring, and the generator's noise.

    The data are generated, so a pass is any number of batches: ``len()`` of them.
    """

    def __init__(self, batch_size: int, noise_dim: int, batches_per_pass: int, seed: int = 0):
        self.batch_size, self.noise_dim, self.batches_per_pass = batch_size, noise_dim, batches_per_pass
        self._rng = np.random.default_rng(seed)

    def __len__(self) -> int:
        return self.batches_per_pass

    def __iter__(self):
        for _ in range(self.batches_per_pass):
            z = self._rng.normal(size=(self.batch_size, self.noise_dim)).astype(np.float32)
            yield [sample_real(self._rng, self.batch_size), z]


def mode_statistics(samples: np.ndarray) -> dict[str, float]:
    """How close ``samples`` are to the real distribution.

    ``mode_distance``: mean distance to the nearest mode; ``high_quality``: the
    fraction within 4 standard deviations of a mode; ``modes_covered``: how many
    modes have at least 1% of the samples within that distance.
    """
    dist = np.linalg.norm(samples[:, None, :] - MODES[None, :, :], axis=-1)
    nearest, which = dist.min(axis=1), dist.argmin(axis=1)
    close = nearest < 4 * MODE_STD
    counts = np.bincount(which[close], minlength=NUM_MODES)
    return {"mode_distance": float(nearest.mean()), "high_quality": float(close.mean()),
            "modes_covered": float(np.sum(counts >= 0.01 * len(samples)))}


# -- the picture ------------------------------------------------------------------------------------
def render_points(points: np.ndarray, color: tuple[int, int, int], size: int = 256,
                  extent: float = 3.0) -> np.ndarray:
    """A ``size`` x ``size`` RGB scatter plot of ``points`` on [-extent, extent]^2."""
    img = np.full((size, size, 3), 255, np.uint8)
    img[size // 2, :] = img[:, size // 2] = 230  # the axes
    img[[0, -1], :] = 180
    img[:, [0, -1]] = 180  # the frame
    cols = np.round((points[:, 0] + extent) / (2 * extent) * (size - 1)).astype(int)
    rows = np.round((extent - points[:, 1]) / (2 * extent) * (size - 1)).astype(int)
    inside = (cols >= 1) & (cols < size - 2) & (rows >= 1) & (rows < size - 2)
    rows, cols = rows[inside], cols[inside]
    for dr in (0, 1):  # 2x2 dots
        for dc in (0, 1):
            img[rows + dr, cols + dc] = color
    return img


def real_vs_generated(real: np.ndarray, generated: np.ndarray) -> np.ndarray:
    """Two panels side by side: real samples (blue), generated ones (orange)."""
    left, right = render_points(real, (31, 119, 180)), render_points(generated, (255, 127, 14))
    gap = np.full((left.shape[0], 8, 3), 255, np.uint8)
    return np.concatenate([left, gap, right], axis=1)


# -- the model --------------------------------------------------------------------------------------
def mlp(hidden: int, outputs: int, name: str) -> keras.Sequential:
    # no keras.Input: the layers build (create their variables) in the first tower
    return keras.Sequential([keras.layers.Dense(hidden, activation="relu"),
                             keras.layers.Dense(hidden, activation="relu"),
                             keras.layers.Dense(outputs)], name=name)


class ToyGAN(ModelDescBase):
    """A generator and a discriminator (small MLPs) and their two losses.

    ``build_graph`` returns ``(d_loss, g_loss)``: the discriminator's logistic
    loss, and the generator's non-saturating loss ``-log D(G(z))``.
    """

    def __init__(self, noise_dim: int = 16, hidden: int = 128, learning_rate: float = 1e-3):
        self.noise_dim, self.learning_rate = noise_dim, learning_rate
        self.generator = mlp(hidden, 2, "generator")
        self.discriminator = mlp(hidden, 1, "discriminator")

    def inputs(self) -> list[tf.TensorSpec]:
        return [tf.TensorSpec([None, 2], tf.float32, "real"),
                tf.TensorSpec([None, self.noise_dim], tf.float32, "z")]

    def build_graph(self, real: tf.Tensor, z: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        fake = tf.identity(self.generator(z), name="fake")
        logit_real, logit_fake = self.discriminator(real), self.discriminator(fake)
        # softplus(-x) = -log sigmoid(x), softplus(x) = -log(1 - sigmoid(x))
        d_loss = tf.reduce_mean(tf.nn.softplus(-logit_real)) + tf.reduce_mean(tf.nn.softplus(logit_fake))
        g_loss = tf.reduce_mean(tf.nn.softplus(-logit_fake))
        d_loss, g_loss = tf.identity(d_loss, name="d_loss"), tf.identity(g_loss, name="g_loss")
        add_moving_summary(d_loss, g_loss)
        return d_loss, g_loss

    def optimizers(self) -> tuple[keras.optimizers.Optimizer, keras.optimizers.Optimizer]:
        """``(discriminator's, generator's)``: Adam with beta_1 = 0.5, as usual for GANs."""
        return (keras.optimizers.Adam(self.learning_rate, beta_1=0.5),
                keras.optimizers.Adam(self.learning_rate, beta_1=0.5))


# -- the trainer ------------------------------------------------------------------------------------
class GANTrainer(TowerTrainer):
    """Alternates a discriminator step and a generator step, each with its own optimizer.

    The constructor builds the graph (the seeds' "create them inside
    Trainer.__init__"): it sets up the input, builds tower ``tower0`` once to
    create the variables, builds both optimizers, and traces the two steps.
    Each step rebuilds the tower in its own trace (same variables) and applies
    the gradient of one loss to one network.
    """

    def __init__(self, model: ToyGAN, input: InputSource):
        super().__init__()
        signature = self.setup_input(model.get_input_signature(), input)
        self.model = model
        self.tower_func = TowerFunc(model.build_graph, signature)
        self.d_optimizer, self.g_optimizer = model.optimizers()
        # what ModelSaver checkpoints besides the model, by key (renaming the attributes keeps them)
        self.declare_checkpoint_objects(d_optimizer=self.d_optimizer, g_optimizer=self.g_optimizer)
        self._build_variables()
        self.d_optimizer.build(self.model.discriminator.trainable_variables)
        self.g_optimizer.build(self.model.generator.trainable_variables)
        feeds = input.feed_signature()
        self.d_step = TracedStep(functools.partial(self._step_body, "discriminator"), feeds, name="d_step")
        self.g_step = TracedStep(functools.partial(self._step_body, "generator"), feeds, name="g_step")
        self.d_step.trace()
        self.g_step.trace()  # the graph is frozen from here on

    def _build_variables(self) -> None:
        def build(feeds: Mapping[str, tf.Tensor]) -> Any:
            with self.input.tracing(feeds):
                inputs = self.input.get_input_tensors(0)
            with summary_collection_scope(None), TowerContext("tower0", is_training=True):
                return self.tower_func(*inputs)

        tf.function(build, input_signature=[self.input.feed_signature()]).get_concrete_function()

    def _step_body(self, network: str, feeds: Mapping[str, tf.Tensor],
                   fetch_names: tuple[str, ...]) -> tuple[tf.Tensor, dict[str, tf.Tensor]]:
        """One step of ``network``: returns its loss, and the tensors callbacks asked for."""
        with self.input.tracing(feeds):
            inputs = self.input.get_input_tensors(0)
        # the moving averages of the losses are updated by the hooked (discriminator) step only
        collection = self.summary_collection if network == "discriminator" else None
        with summary_collection_scope(collection), TowerContext("tower0", is_training=True) as ctx:
            with tf.GradientTape() as tape:
                d_loss, g_loss = self.tower_func(*inputs)
        if network == "discriminator":
            loss, optimizer = d_loss, self.d_optimizer
        else:
            loss, optimizer = g_loss, self.g_optimizer
        variables = getattr(self.model, network).trainable_variables
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
        handle = self.tower_func.towers[ctx.name]
        return loss, {name: handle.get_tensor(name) for name in fetch_names}

    def run_step(self) -> None:
        self.hooked_run(self.d_step)  # callbacks' before_run/after_run; global_step += 1
        self.run(self.g_step)         # no hooks

    # checkpoint_objects (what ModelSaver saves) need not be overridden: TowerTrainer's hold
    # the model (keyed by ToyGAN's attributes) and the optimizers declared in __init__


# -- watching it learn ------------------------------------------------------------------------------
class SampleQuality(Callback):
    """Generate samples with an inference tower; report :func:`mode_statistics` as
    ``samples/<stat>`` and draw them against real ones into ``samples.png`` (and TensorBoard).

    Runs before training too, so the first record shows the untrained generator.
    """

    def __init__(self, path: str, num_samples: int = 2000, seed: int = 1):
        self.path, self.num_samples, self.seed = path, num_samples, seed

    def _setup_graph(self) -> None:
        # "real" is not given: the predictor fills it with zeros, which "fake" does not read
        self.predictor = self.trainer.get_predictor(["z"], ["fake"])
        rng = np.random.default_rng(self.seed)  # the same noise and real samples every time
        self.z = rng.normal(size=(self.num_samples, self.trainer.model.noise_dim)).astype(np.float32)
        self.real = sample_real(rng, self.num_samples)

    def _before_train(self) -> None:
        self._trigger()

    def _trigger(self) -> None:
        generated = self.predictor(self.z)[0]
        for name, value in mode_statistics(generated).items():
            self.trainer.monitors.put_scalar(f"samples/{name}", value)
        image = real_vs_generated(self.real, generated)
        tf.io.write_file(self.path, tf.io.encode_png(image))
        self.trainer.monitors.put_image("samples", image)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--steps-per-epoch", type=int, default=300,
                        help="iterations (a discriminator step and a generator step) per epoch")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--logdir", default="train_log/gan_toy")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    logging.basicConfig(level=logging.INFO, format="[%(asctime)s %(name)s] %(message)s", datefmt="%H:%M:%S")
    logging.getLogger("absl").setLevel(logging.WARNING)
    keras.utils.set_random_seed(args.seed)
    logdir = set_logger_dir(args.logdir, action="backup")  # an old run there is renamed, not lost
    model = ToyGAN(learning_rate=args.learning_rate)
    data = RingWithNoise(args.batch_size, model.noise_dim, batches_per_pass=args.steps_per_epoch,
                         seed=args.seed)
    trainer = GANTrainer(model, QueueInput(data))
    png = os.path.join(logdir, "samples.png")
    trainer.train_with_defaults(callbacks=[SampleQuality(png), ModelSaver(max_to_keep=2)],
                                steps_per_epoch=args.steps_per_epoch, max_epoch=args.epochs)

    stats = {k: trainer.monitors.get_history(f"samples/{k}") for k in ("mode_distance", "high_quality",
                                                                        "modes_covered")}
    print(f"\nmean distance of generated samples to the nearest mode: {stats['mode_distance'][0]:.3f} "
          f"untrained, {stats['mode_distance'][-1]:.3f} trained; "
          f"{stats['high_quality'][-1]:.0%} within {4 * MODE_STD:g} of a mode, "
          f"{stats['modes_covered'][-1]:.0f} of {NUM_MODES} modes covered")
    print(f"samples (real left, generated right): {png}")
    print(f"TensorBoard logs: {logdir}  (tensorboard --logdir {logdir})")


if __name__ == "__main__":
    main()
