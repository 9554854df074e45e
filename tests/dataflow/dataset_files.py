"""Small dataset files in the real formats (MNIST idx.gz, CIFAR python pickles, SVHN .mat, an
ILSVRC12-style directory), written by the dataset tests and the parity tests alike.

Each writer returns what it wrote, so tests compare the readers' datapoints with it.
"""
from __future__ import annotations

import gzip
import os
import pickle
import struct

import numpy as np

MNIST_FILES = {"train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
               "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")}


def write_mnist(directory, split: str = "train", n: int = 7, seed: int = 0, rows: int = 28, cols: int = 28):
    """The idx3/idx1 gz pair of ``split``: big-endian header (magic 2051/2049, counts), then bytes.

    Returns ``(images uint8 (n, rows, cols), labels uint8 (n,))``.
    """
    os.makedirs(directory, exist_ok=True)
    rng = np.random.RandomState(seed)
    images = rng.randint(0, 256, size=(n, rows, cols)).astype(np.uint8)
    labels = rng.randint(0, 10, size=n).astype(np.uint8)
    image_name, label_name = MNIST_FILES[split]
    with gzip.open(os.path.join(directory, image_name), "wb") as f:
        f.write(struct.pack(">IIII", 2051, n, rows, cols) + images.tobytes())
    with gzip.open(os.path.join(directory, label_name), "wb") as f:
        f.write(struct.pack(">II", 2049, n) + labels.tobytes())
    return images, labels


def write_cifar(directory, classnum: int = 10, per_file: int = 6, seed: int = 0, splits=("train", "test")):
    """A CIFAR python folder in ``directory``, pickled as the originals (protocol 2, dict of
    ``b'data'`` (n, 3072) uint8 in CHW order and a label list; a meta pickle with str keys).

    Returns ``{"train": (images NHWC, labels), "test": (...), "label_names": [...]}``.
    """
    rng = np.random.RandomState(seed)
    if classnum == 10:
        folder = os.path.join(directory, "cifar-10-batches-py")
        files = {"train": [f"data_batch_{i}" for i in range(1, 6)], "test": ["test_batch"]}
        label_key, meta_name, names_key = b"labels", "batches.meta", "label_names"
    else:
        folder = os.path.join(directory, "cifar-100-python")
        files = {"train": ["train"], "test": ["test"]}
        label_key, meta_name, names_key = b"fine_labels", "meta", "fine_label_names"
    os.makedirs(folder, exist_ok=True)
    out = {}
    for split, names in files.items():
        if split not in splits:
            continue
        all_images, all_labels = [], []
        for name in names:
            data = rng.randint(0, 256, size=(per_file, 3072)).astype(np.uint8)
            labels = [int(x) for x in rng.randint(0, classnum, size=per_file)]
            with open(os.path.join(folder, name), "wb") as f:
                pickle.dump({b"batch_label": name.encode(), label_key: labels, b"data": data}, f, protocol=2)
            all_images.append(data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1))
            all_labels += labels
        out[split] = (np.concatenate(all_images), all_labels)
    label_names = [f"class{i}" for i in range(classnum)]
    with open(os.path.join(folder, meta_name), "wb") as f:
        pickle.dump({names_key: label_names, "num_cases_per_batch": per_file}, f, protocol=2)
    out["label_names"] = label_names
    return out


def write_svhn(directory, split: str = "train", n: int = 5, seed: int = 0):
    """``<split>_32x32.mat`` as the original: X (32, 32, 3, n) uint8, y (n, 1) with 10 for digit 0.

    Returns ``(images (n, 32, 32, 3), labels 0..9)``.
    """
    import scipy.io
    os.makedirs(directory, exist_ok=True)
    rng = np.random.RandomState(seed)
    images = rng.randint(0, 256, size=(n, 32, 32, 3)).astype(np.uint8)
    digits = np.arange(n) % 10
    y = np.where(digits == 0, 10, digits).astype(np.uint8).reshape(n, 1)
    scipy.io.savemat(os.path.join(directory, f"{split}_32x32.mat"), {"X": images.transpose(1, 2, 3, 0), "y": y})
    return images, digits.astype(np.uint8)


def write_ilsvrc(root, n_val: int = 4, synsets=("n01440764", "n01443537", "n01484850"), seed: int = 0,
                 structure: str = "original"):
    """An ILSVRC12-style ``root/val/`` of PNG images named ``ILSVRC2012_val_*.JPEG`` (OpenCV
    decodes by content), and ``root/meta/`` with ``synsets.txt``, ``synset_words.txt``, ``val.txt``.

    Returns ``(data_dir, meta_dir, [(filename, label, image BGR)])``.
    """
    import cv2
    rng = np.random.RandomState(seed)
    meta = os.path.join(root, "meta")
    os.makedirs(meta, exist_ok=True)
    with open(os.path.join(meta, "synsets.txt"), "w") as f:
        f.write("".join(s + "\n" for s in synsets))
    with open(os.path.join(meta, "synset_words.txt"), "w") as f:
        f.write("".join(f"{s} word{i}\n" for i, s in enumerate(synsets)))
    entries = []
    for i in range(n_val):
        name = f"ILSVRC2012_val_{i + 1:08d}.JPEG"
        label = int(rng.randint(len(synsets)))
        image = rng.randint(0, 256, size=(5 + i, 7, 3)).astype(np.uint8)
        folder = os.path.join(root, "val") if structure == "original" else os.path.join(root, "val", synsets[label])
        os.makedirs(folder, exist_ok=True)
        ok, buf = cv2.imencode(".png", image)
        assert ok
        with open(os.path.join(folder, name), "wb") as f:
            f.write(buf.tobytes())
        entries.append((name, label, image))
    with open(os.path.join(meta, "val.txt"), "w") as f:
        f.write("".join(f"{name} {label}\n" for name, label, _ in entries))
    return root, meta, entries


def write_bsds(root, names, seed=0):
    """BSR/BSDS500/data/{images,groundTruth}/val/ with PNG-content .jpg images (one portrait) and
    groundTruth .mat files of two annotators; returns [(image landscape, edge map)] by sorted name."""
    import cv2
    import scipy.io
    rng = np.random.RandomState(seed)
    data = os.path.join(root, "BSR", "BSDS500", "data")
    os.makedirs(os.path.join(data, "images", "val"))
    os.makedirs(os.path.join(data, "groundTruth", "val"))
    out = []
    for i, name in enumerate(names):
        shape = (321, 481) if i % 2 == 0 else (481, 321)
        image = rng.randint(0, 256, size=shape + (3,)).astype(np.uint8)
        cv2.imwrite(os.path.join(data, "images", "val", name + ".jpg.png"), image)
        os.replace(os.path.join(data, "images", "val", name + ".jpg.png"), os.path.join(data, "images", "val", name + ".jpg"))
        bounds = [(rng.rand(*shape) > 0.7).astype(np.uint8) for _ in range(2)]
        gt = np.empty((1, 2), dtype=object)
        for k in range(2):
            gt[0, k] = {"Boundaries": bounds[k], "Segmentation": np.zeros(shape, np.uint16)}
        scipy.io.savemat(os.path.join(data, "groundTruth", "val", name + ".mat"), {"groundTruth": gt})
        edges = (bounds[0].astype(np.float32) + bounds[1]) * 0.5
        if i % 2:
            image, edges = image.transpose(1, 0, 2), edges.T
        out.append((image, edges))
    return out
