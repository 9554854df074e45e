"""Train a small convnet on MNIST, read from its idx.gz files, with image augmentation.

tensorpack's ``mnist-convnet`` pipeline ported to trainstack: ``dataset.Mnist`` reads the four
files of MNIST (``train-images-idx3-ubyte.gz`` ...) from ``--data-dir`` (default: the dataset
module's own, ``$TRAINSTACK_DATASET`` or ``$TENSORPACK_DATASET`` or ``~/tensorpack_data``, then
``mnist_data``; downloaded there when missing and the network allows it), and
``AugmentImageComponent`` shifts every training image by up to 2 pixels (``CenterPaste`` onto
32x32, then ``RandomCrop`` back to 28x28). ``launch_train_with_config(TrainConfig(dataflow=...),
SimpleTrainer())`` trains with the default callbacks and monitors, plus an ``InferenceRunner``
reporting the validation cost and error on the test split after every epoch and a
``ModelSaver``.

    python examples/mnist_augmented.py [--data-dir ~/tensorpack_data/mnist_data] [--epochs 5]

An existing log directory is renamed with a timestamp (``backup``), never asked about.
"""
from __future__ import annotations

import argparse
import logging
import time

import trainstack.callbacks  # noqa: F401 - first: imports TensorFlow without its start-up lines

# isort: split

import keras
import numpy as np
import tensorflow as tf

from trainstack.callbacks import ModelSaver, add_moving_summary, set_logger_dir
from trainstack.dataflow import AugmentImageComponent, BatchData, MapDataComponent, dataset, imgaug
from trainstack.towers import (
    ClassificationError,
    InferenceRunner,
    ModelDesc,
    ScalarStats,
    SimpleTrainer,
    TrainConfig,
    get_current_tower_context,
    launch_train_with_config,
)

logger = logging.getLogger("trainstack.examples")

IMAGE_SIZE = 28
NUM_CLASSES = 10


def to_int32(label: np.ndarray) -> np.ndarray:
    """Mnist's labels are uint8; the model's ``label`` input is int32."""
    return label.astype(np.int32)


def get_data(data_dir: str | None, batch_size: int) -> tuple[BatchData, BatchData]:
    """The training batches (augmented, shuffled) and the test batches (in order, all of them)."""
    train = dataset.Mnist("train", dir=data_dir)
    train = AugmentImageComponent(train, [
        imgaug.CenterPaste((IMAGE_SIZE + 4, IMAGE_SIZE + 4)),   # a 2-pixel black margin
        imgaug.RandomCrop((IMAGE_SIZE, IMAGE_SIZE)),           # shifts the digit by -2..2 pixels
    ])
    train = BatchData(MapDataComponent(train, to_int32, index=1), batch_size)
    test = dataset.Mnist("test", shuffle=False, dir=data_dir)
    test = BatchData(MapDataComponent(test, to_int32, index=1), 256, remainder=True)
    return train, test


class MnistConvNet(ModelDesc):
    """Two 3x3 conv + max-pool blocks, a dense layer with dropout, 10 logits."""

    def __init__(self, width: int = 32, learning_rate: float = 1e-3) -> None:
        self.learning_rate = learning_rate
        self.conv1 = keras.layers.Conv2D(width, 3, padding="same", activation="relu")
        self.conv2 = keras.layers.Conv2D(2 * width, 3, padding="same", activation="relu")
        self.pool = keras.layers.MaxPooling2D(2)
        self.flatten = keras.layers.Flatten()
        self.fc = keras.layers.Dense(128, activation="relu")
        self.dropout = keras.layers.Dropout(0.3)
        self.logits = keras.layers.Dense(NUM_CLASSES)

    def inputs(self) -> list[tf.TensorSpec]:
        return [tf.TensorSpec([None, IMAGE_SIZE, IMAGE_SIZE], tf.float32, "input"),
                tf.TensorSpec([None], tf.int32, "label")]

    def build_graph(self, image: tf.Tensor, label: tf.Tensor) -> tf.Tensor:
        training = get_current_tower_context().is_training
        x = tf.expand_dims(image * 2 - 1, 3)             # [0, 1] -> [-1, 1], one channel
        x = self.pool(self.conv1(x))
        x = self.flatten(self.pool(self.conv2(x)))
        logits = self.logits(self.dropout(self.fc(x), training=training))

        cost = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(label, logits), name="cost")
        wrong = tf.cast(tf.not_equal(tf.argmax(logits, axis=1, output_type=tf.int32), label), tf.float32)
        wrong = tf.identity(wrong, name="incorrect_vector")   # ClassificationError reads it
        accuracy = tf.identity(1.0 - tf.reduce_mean(wrong), name="accuracy")
        add_moving_summary(cost, accuracy)
        return cost

    def optimizer(self) -> keras.optimizers.Optimizer:
        return keras.optimizers.Adam(self.learning_rate)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=None,
                        help="the directory with MNIST's four idx.gz files (default: "
                             "dataset.get_dataset_path('mnist_data'))")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--logdir", default="train_log/mnist_augmented")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.epochs < 1:
        parser.error(f"--epochs must be at least 1, got {args.epochs}")

    logging.basicConfig(level=logging.INFO, format="[%(asctime)s %(name)s] %(message)s", datefmt="%H:%M:%S")
    logging.getLogger("absl").setLevel(logging.WARNING)
    start = time.perf_counter()
    keras.utils.set_random_seed(args.seed)
    logdir = set_logger_dir(args.logdir, action="backup")  # an old run there is renamed, not lost
    train, test = get_data(args.data_dir, args.batch_size)
    logger.info("MNIST: %d training batches of %d, %d test batches", len(train), args.batch_size, len(test))

    config = TrainConfig(
        model=MnistConvNet(learning_rate=args.learning_rate),
        dataflow=train,
        callbacks=[
            ModelSaver(max_to_keep=2),
            InferenceRunner(test, [ScalarStats("cost"), ClassificationError("incorrect_vector")]),
        ],
        max_epoch=args.epochs,  # extra_callbacks and monitors: the defaults
    )
    trainer = SimpleTrainer()
    launch_train_with_config(config, trainer)

    error = trainer.monitors.get_latest("validation_error")
    print(f"\nfinal validation error: {error:.4f} after {args.epochs} epochs, "
          f"{time.perf_counter() - start:.1f} s")
    print(f"TensorBoard logs: {logdir}  (tensorboard --logdir {logdir})")


if __name__ == "__main__":
    main()
