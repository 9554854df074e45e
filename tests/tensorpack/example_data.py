"""Small, learnable datasets in their real file formats, for tensorpack's examples run as written.

Each class is a fixed random pattern plus noise, so a model that learned nothing stays at chance
(90% error on 10 classes) while a trained one separates the classes within a few dozen steps.
The files are the originals' formats, read by ``trainstack.dataflow.dataset`` from
``$TENSORPACK_DATASET``: MNIST's idx ``.gz`` files (``mnist_data/``), CIFAR-10's python pickles
(``cifar10_data/cifar-10-batches-py/``) and SVHN's ``.mat`` files (``svhn_data/``); for the GAN
examples, a folder of JPEG images (``write_jpegs``, what DCGAN.py's ``--data`` reads).
"""
from __future__ import annotations

import gzip
import os
import pickle
import struct

import numpy as np

CLASSES = 10


def _images(n: int, shape: tuple[int, ...], seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` uint8 images of ``shape`` and their labels: class ``k``'s pattern plus noise. A pattern
    is a 4x4 grid of random levels, mirrored left to right and scaled up, so that the examples'
    augmentations (random crops, horizontal flips, brightness, contrast, resizing) keep it."""
    grid = np.random.RandomState(1234).uniform(0, 255, size=(CLASSES, 4, 4, *shape[2:]))
    grid[:, :, 2:] = grid[:, :, 1::-1]
    patterns = grid.repeat(shape[0] // 4, axis=1).repeat(shape[1] // 4, axis=2)
    rng = np.random.RandomState(seed)
    labels = np.arange(n) % CLASSES
    rng.shuffle(labels)
    images = 0.5 * patterns[labels] + rng.uniform(0, 0.5 * 255, size=(n, *shape))
    return np.clip(images, 0, 255).astype(np.uint8), labels.astype(np.uint8)


def write_mnist(root: str, train: int = 1024, test: int = 256) -> None:
    """``root/mnist_data/`` with the four idx gz files (big-endian headers, then the bytes)."""
    folder = os.path.join(root, "mnist_data")
    os.makedirs(folder, exist_ok=True)
    for (image_file, label_file), n, seed in [
            (("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"), train, 0),
            (("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"), test, 1)]:
        images, labels = _images(n, (28, 28), seed)
        with gzip.open(os.path.join(folder, image_file), "wb") as f:
            f.write(struct.pack(">IIII", 2051, n, 28, 28) + images.tobytes())
        with gzip.open(os.path.join(folder, label_file), "wb") as f:
            f.write(struct.pack(">II", 2049, n) + labels.tobytes())


def write_cifar10(root: str, per_batch: int = 256, test: int = 256) -> None:
    """``root/cifar10_data/cifar-10-batches-py/``: five data batches, a test batch and
    ``batches.meta``, pickled as the originals (``b'data'`` (n, 3072) in CHW order, ``b'labels'``)."""
    folder = os.path.join(root, "cifar10_data", "cifar-10-batches-py")
    os.makedirs(folder, exist_ok=True)
    names = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]
    for i, name in enumerate(names):
        images, labels = _images(test if name == "test_batch" else per_batch, (32, 32, 3), seed=10 + i)
        data = images.transpose(0, 3, 1, 2).reshape(len(images), 3072)
        with open(os.path.join(folder, name), "wb") as f:
            pickle.dump({b"batch_label": name.encode(), b"labels": [int(x) for x in labels], b"data": data},
                        f, protocol=2)
    with open(os.path.join(folder, "batches.meta"), "wb") as f:
        pickle.dump({"label_names": [f"class{i}" for i in range(CLASSES)], "num_cases_per_batch": per_batch},
                    f, protocol=2)


def write_svhn(root: str, sizes: dict[str, int] | None = None) -> None:
    """``root/svhn_data/<split>_32x32.mat`` for train, extra and test, as the originals:
    ``X`` (32, 32, 3, n) uint8 and ``y`` (n, 1), digit 0 stored as 10."""
    import scipy.io
    folder = os.path.join(root, "svhn_data")
    os.makedirs(folder, exist_ok=True)
    for seed, (split, n) in enumerate((sizes or {"train": 512, "extra": 512, "test": 256}).items()):
        images, labels = _images(n, (32, 32, 3), seed=20 + seed)
        y = np.where(labels == 0, 10, labels).astype(np.uint8).reshape(n, 1)
        scipy.io.savemat(os.path.join(folder, f"{split}_32x32.mat"), {"X": images.transpose(1, 2, 3, 0), "y": y})


def write_jpegs(folder: str, n: int = 32, size: int = 40) -> None:
    """``folder/<i>.jpg``: ``n`` ``size``x``size`` colour JPEGs, each a bright disc of random radius and
    place on a dark background of random colour (a distribution a GAN's discriminator tells from noise)."""
    import cv2
    os.makedirs(folder, exist_ok=True)
    rng = np.random.RandomState(30)
    for i in range(n):
        image = np.empty((size, size, 3), np.uint8)
        image[:] = rng.randint(0, 96, size=3)
        centre = tuple(int(c) for c in rng.randint(size // 3, 2 * size // 3, size=2))
        cv2.circle(image, centre, int(rng.randint(size // 6, size // 3)), (255, 255, 255), -1)
        cv2.imwrite(os.path.join(folder, f"{i}.jpg"), image)
