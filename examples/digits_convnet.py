"""Train a small convnet on scikit-learn's 8x8 handwritten digits with trainstack.

The project's main job. The data ship inside scikit-learn (1797 images of the
digits 0-9, no download); a fixed, seeded split keeps 500 of them for
validation. The model is a ``ModelDesc`` whose Keras 3 layers hold the
variables; ``launch_train_with_config(config, SimpleTrainer())`` trains it with
the seeds' default callbacks (progress bar, moving-average summaries) and
monitors (TensorBoard events, ``stats.jsonl``, console), plus:

- ``InferenceRunner``: the validation cost and error after every epoch;
- ``ScheduledHyperParamSetter``: the learning rate drops twice;
- ``ModelSaver``: a checkpoint after every epoch.

    python examples/digits_convnet.py [--epochs 20] [--logdir train_log/digits_convnet] [--verbose]

An existing log directory is renamed with a timestamp (``backup``), never
asked about. With the defaults it reaches about 1% validation error in well
under a minute on two CPU cores. TensorFlow's C++ start-up messages are left
out (trainstack does it when it imports TensorFlow first); ``--verbose`` shows
them (it sets ``TRAINSTACK_TF_LOGS=1``, the library's switch), and trainstack's
DEBUG lines.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
import time

if __name__ == "__main__" and "--verbose" in sys.argv[1:]:
    os.environ["TRAINSTACK_TF_LOGS"] = "1"  # read when trainstack imports TensorFlow, just below

# trainstack first: it imports TensorFlow without TensorFlow's start-up lines
from trainstack.callbacks import ModelSaver, ScheduledHyperParamSetter, add_moving_summary, set_logger_dir  # noqa: E402
from trainstack.towers import (  # noqa: E402
    ClassificationError,
    InferenceRunner,
    ModelDesc,
    ScalarStats,
    SimpleTrainer,
    TrainConfig,
    get_current_tower_context,
    launch_train_with_config,
)

# isort: split

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402

logger = logging.getLogger("trainstack.examples")

IMAGE_SIZE = 8
NUM_CLASSES = 10


def load_split(num_val: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The digits as ``(x_train, y_train, x_val, y_val)``: images in [0, 1], shape (n, 8, 8, 1)."""
    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)[..., None]  # pixel values are 0..16
    y = digits.target.astype(np.int32)
    order = np.random.default_rng(seed).permutation(len(x))
    val, train = order[:num_val], order[num_val:]
    return x[train], y[train], x[val], y[val]


class Batches:
    """A dataflow: one ``[images, labels]`` datapoint per batch, a pass is one epoch.

    With ``shuffle`` every pass takes a new order and drops the last partial
    batch (all training batches have the same size); without it, a pass is the
    whole array in order, the last batch possibly smaller (for validation).
    """

    def __init__(self, x: np.ndarray, y: np.ndarray, batch_size: int, shuffle: bool, seed: int = 0):
        self.x, self.y, self.batch_size, self.shuffle = x, y, batch_size, shuffle
        self._rng = np.random.default_rng(seed)

    def __len__(self) -> int:
        n = len(self.x)
        return n // self.batch_size if self.shuffle else -(-n // self.batch_size)

    def __iter__(self):
        order = self._rng.permutation(len(self.x)) if self.shuffle else np.arange(len(self.x))
        for i in range(len(self)):
            idx = order[i * self.batch_size:(i + 1) * self.batch_size]
            yield [self.x[idx], self.y[idx]]


class DigitsConvNet(ModelDesc):
    """Two 3x3 conv blocks with max pooling, then a dense layer with dropout."""

    def __init__(self, width: int = 32, learning_rate: float = 1e-3):
        self.learning_rate = learning_rate
        self.conv1 = keras.layers.Conv2D(width, 3, padding="same", activation="relu")
        self.conv2 = keras.layers.Conv2D(width, 3, padding="same", activation="relu")
        self.conv3 = keras.layers.Conv2D(2 * width, 3, padding="same", activation="relu")
        self.pool = keras.layers.MaxPooling2D(2)
        self.flatten = keras.layers.Flatten()
        self.fc = keras.layers.Dense(128, activation="relu")
        self.dropout = keras.layers.Dropout(0.3)
        self.logits = keras.layers.Dense(NUM_CLASSES)

    def inputs(self) -> list[tf.TensorSpec]:
        return [tf.TensorSpec([None, IMAGE_SIZE, IMAGE_SIZE, 1], tf.float32, "image"),
                tf.TensorSpec([None], tf.int32, "label")]

    def build_graph(self, image: tf.Tensor, label: tf.Tensor) -> tf.Tensor:
        training = get_current_tower_context().is_training
        x = self.pool(self.conv2(self.conv1(image)))
        x = self.flatten(self.pool(self.conv3(x)))
        logits = self.logits(self.dropout(self.fc(x), training=training))

        cost = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(label, logits))
        cost = tf.identity(cost, name="cost")
        prediction = tf.argmax(logits, axis=1, output_type=tf.int32)
        # InferenceRunner's ClassificationError and the callbacks fetch these by name
        wrong = tf.cast(tf.not_equal(prediction, label), tf.float32)
        wrong = tf.identity(wrong, name="incorrect_vector")
        accuracy = tf.identity(1.0 - tf.reduce_mean(wrong), name="accuracy")
        add_moving_summary(cost, accuracy)
        return cost

    def optimizer(self) -> keras.optimizers.Optimizer:
        # a float learning rate lives in a variable, which ScheduledHyperParamSetter sets
        return keras.optimizers.Adam(self.learning_rate)


def lr_schedule(epochs: int, learning_rate: float) -> list[tuple[int, float]]:
    """Divide the learning rate by 3 after 60% of the epochs and by 10 after 85%."""
    drops = {int(epochs * 0.6): learning_rate / 3}
    drops[int(epochs * 0.85)] = learning_rate / 10  # the later drop wins when a short run merges them
    return [(0, learning_rate), *sorted((e, v) for e, v in drops.items() if e >= 1)]


def main() -> None:
    # no abbreviations: --verbose is also looked for in sys.argv before trainstack imports TensorFlow
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--num-val", type=int, default=500, help="images held out for validation")
    parser.add_argument("--logdir", default="train_log/digits_convnet")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--verbose", action="store_true",
                        help="show TensorFlow's start-up messages and trainstack's DEBUG lines")
    args = parser.parse_args()
    if args.epochs < 1:
        parser.error(f"--epochs must be at least 1, got {args.epochs}")

    logging.basicConfig(level=logging.INFO, format="[%(asctime)s %(name)s] %(message)s", datefmt="%H:%M:%S")
    if args.verbose:
        logging.getLogger("trainstack").setLevel(logging.DEBUG)
    else:
        logging.getLogger("absl").setLevel(logging.WARNING)  # TensorFlow's per-checkpoint chatter
    gpus = [d.name.removeprefix("/physical_device:") for d in tf.config.list_physical_devices("GPU")]
    logger.info("TensorFlow %s, training on %s", tf.__version__, ", ".join(gpus) or "the CPU (no GPU found)")
    start = time.perf_counter()
    keras.utils.set_random_seed(args.seed)
    logdir = set_logger_dir(args.logdir, action="backup")  # an old run there is renamed, not lost
    x_train, y_train, x_val, y_val = load_split(args.num_val, args.seed)
    logger.info("digits: %d training and %d validation images", len(x_train), len(x_val))

    config = TrainConfig(
        model=DigitsConvNet(learning_rate=args.learning_rate),
        dataflow=Batches(x_train, y_train, args.batch_size, shuffle=True, seed=args.seed),
        callbacks=[
            ModelSaver(max_to_keep=3),
            InferenceRunner(Batches(x_val, y_val, 128, shuffle=False),
                            [ScalarStats("cost"), ClassificationError("incorrect_vector")]),
            ScheduledHyperParamSetter("learning_rate", lr_schedule(args.epochs, args.learning_rate)),
        ],
        max_epoch=args.epochs,  # extra_callbacks and monitors: the seeds' defaults
    )
    trainer = SimpleTrainer()
    launch_train_with_config(config, trainer)

    error = trainer.monitors.get_latest("validation_error")
    print(f"\nfinal validation error: {error:.4f} ({round(error * len(x_val))} of {len(x_val)} "
          f"images wrong) after {args.epochs} epochs, {time.perf_counter() - start:.1f} s")
    print(f"TensorBoard logs: {logdir}  (tensorboard --logdir {logdir})")
    print(f"JSON stats:       {os.path.join(logdir, 'stats.jsonl')}")
    print(f"checkpoints:      {tf.train.latest_checkpoint(logdir)} (latest)")


if __name__ == "__main__":
    main()
