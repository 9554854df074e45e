"""Small, learnable datasets in their real file formats, for tensorpack's examples run as written.

Each class is a fixed random pattern plus noise, so a model that learned nothing stays at chance
(90% error on 10 classes) while a trained one separates the classes within a few dozen steps.
The files are the originals' formats, read by ``trainstack.dataflow.dataset`` from
``$TENSORPACK_DATASET``: MNIST's idx ``.gz`` files (``mnist_data/``), CIFAR-10's python pickles
(``cifar10_data/cifar-10-batches-py/``) and SVHN's ``.mat`` files (``svhn_data/``); for the GAN
examples, a folder of JPEG images (``write_jpegs``, what DCGAN.py's ``--data`` reads); for CTC-TIMIT,
TIMIT's layout of RIFF WAV files and ``.PHN`` phoneme alignments (``write_timit``).
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


def write_ilsvrc12(root: str, classes: int = 4, train_per_class: int = 16, val: int = 8,
                   size: tuple[int, int] = (48, 64)) -> str:
    """ILSVRC12's layout, small: ``root/ilsvrc12/train/<synset>/<synset>_<i>.JPEG`` and
    ``root/ilsvrc12/val/ILSVRC2012_val_<i>.JPEG`` (what ``--data`` names, returned), with caffe's meta files
    in ``root/ilsvrc_metadata/`` (where ``ILSVRCMeta()`` reads them under ``$TENSORPACK_DATASET``):
    ``synsets.txt`` and ``synset_words.txt`` (1000 classes), ``train.txt``, ``val.txt``, ``test.txt``
    (``<file> <label>`` lines). The images (``size`` = height, width) of the first ``classes`` classes
    are class ``k``'s colour pattern plus noise, in JPEG."""
    import cv2
    data = os.path.join(root, "ilsvrc12")
    meta = os.path.join(root, "ilsvrc_metadata")
    os.makedirs(meta, exist_ok=True)
    synsets = [f"n{1440764 + i:08d}" for i in range(1000)]
    with open(os.path.join(meta, "synsets.txt"), "w") as f:
        f.write("".join(f"{s}\n" for s in synsets))
    with open(os.path.join(meta, "synset_words.txt"), "w") as f:
        f.write("".join(f"{s} class {i}\n" for i, s in enumerate(synsets)))
    grid = np.random.RandomState(1234).uniform(0, 255, size=(classes, 4, 4, 3))
    patterns = grid.repeat(size[0] // 4, axis=1).repeat(size[1] // 4, axis=2)
    rng = np.random.RandomState(40)

    def image(label: int) -> np.ndarray:
        noisy = 0.6 * patterns[label] + rng.uniform(0, 0.4 * 255, size=(*size, 3))
        return np.clip(noisy, 0, 255).astype(np.uint8)

    train = []
    for k in range(classes):
        os.makedirs(os.path.join(data, "train", synsets[k]), exist_ok=True)
        for i in range(train_per_class):
            name = f"{synsets[k]}/{synsets[k]}_{i}.JPEG"
            cv2.imwrite(os.path.join(data, "train", name), image(k))
            train.append(f"{name} {k}\n")
    os.makedirs(os.path.join(data, "val"), exist_ok=True)
    os.makedirs(os.path.join(data, "test"), exist_ok=True)
    val_lines, test = [], []
    for i in range(val):
        name = f"ILSVRC2012_val_{i + 1:08d}.JPEG"
        cv2.imwrite(os.path.join(data, "val", name), image(i % classes))
        val_lines.append(f"{name} {i % classes}\n")
        name = f"ILSVRC2012_test_{i + 1:08d}.JPEG"
        cv2.imwrite(os.path.join(data, "test", name), image(i % classes))
        test.append(f"{name} 0\n")
    for name, lines in (("train.txt", train), ("val.txt", val_lines), ("test.txt", test)):
        with open(os.path.join(meta, name), "w") as f:
            f.write("".join(lines))
    with open(os.path.join(meta, "imagenet_mean.binaryproto"), "wb") as f:
        f.write(blob_proto(per_pixel_mean()))
    return data


def per_pixel_mean() -> np.ndarray:
    """A (3, 256, 256) float32 mean image, caffe's layout (channels first, BGR): caffe's channel means
    plus a ramp along the rows, so that a reader that mixes up the axes is caught."""
    ramp = np.linspace(-8, 8, 256, dtype=np.float32)[None, :, None]
    return (np.array([104.0, 117.0, 123.0], np.float32)[:, None, None] + ramp).repeat(256, axis=2)


def blob_proto(array: np.ndarray) -> bytes:
    """``array`` (C, H, W) as caffe's serialized ``BlobProto``: ``num`` 1, ``channels``, ``height``,
    ``width`` (fields 1-4, varints), then ``data`` (field 5, packed little-endian floats)."""
    def varint(v: int) -> bytes:
        out = bytearray()
        while True:
            out.append((v & 0x7F) | (0x80 if v > 0x7F else 0))
            v >>= 7
            if not v:
                return bytes(out)
    head = b"".join(varint(field << 3) + varint(v) for field, v in zip((1, 2, 3, 4), (1, *array.shape)))
    data = array.astype("<f4").tobytes()
    return head + varint(5 << 3 | 2) + varint(len(data)) + data


def write_bsds500(root: str, sizes: dict[str, int] | None = None) -> str:
    """``root/BSR/BSDS500/data/``, BSDS500's layout: ``images/<split>/<id>.jpg`` (481x321 landscape or
    321x481 portrait JPEGs) and ``groundTruth/<split>/<id>.mat``, each a MATLAB cell array ``groundTruth``
    of one struct per annotator with ``Segmentation`` and ``Boundaries`` (uint8 0/1), as the originals.
    An image is a few flat-coloured discs on a background; its annotators' boundaries are the discs' edges
    (a second annotator skips one disc), so the edge maps average to 1 and 0.5. Returns ``root``."""
    import cv2
    import scipy.io
    data = os.path.join(root, "BSR", "BSDS500", "data")
    rng = np.random.RandomState(50)
    for split, n in (sizes or {"train": 4, "val": 2, "test": 1}).items():
        os.makedirs(os.path.join(data, "images", split), exist_ok=True)
        os.makedirs(os.path.join(data, "groundTruth", split), exist_ok=True)
        for i in range(n):
            shape = (321, 481) if i % 2 == 0 else (481, 321)   # portrait images are stored as such
            image = np.empty((*shape, 3), np.uint8)
            image[:] = rng.randint(0, 256, size=3)
            segments = []
            for _ in range(3):
                centre = (int(rng.randint(60, shape[1] - 60)), int(rng.randint(60, shape[0] - 60)))
                radius = int(rng.randint(20, 60))
                cv2.circle(image, centre, radius, tuple(int(c) for c in rng.randint(0, 256, size=3)), -1)
                segments.append((centre, radius))
            annotators = np.empty((1, 2), dtype=object)
            for k in range(2):
                seg = np.ones(shape, np.uint16)
                for j, (centre, radius) in enumerate(segments[k:]):
                    cv2.circle(seg, centre, radius, j + 2, -1)
                edges = np.zeros(shape, np.uint8)
                edges[:, 1:] |= seg[:, 1:] != seg[:, :-1]
                edges[1:, :] |= seg[1:, :] != seg[:-1, :]
                annotators[0, k] = {"Segmentation": seg, "Boundaries": edges}
            name = f"{100000 + 7 * i + len(split)}"
            cv2.imwrite(os.path.join(data, "images", split, f"{name}.jpg"), image)
            scipy.io.savemat(os.path.join(data, "groundTruth", split, f"{name}.mat"), {"groundTruth": annotators})
    return root


def write_ptb(root: str, train_steps: int = 30, other_steps: int = 2, vocab: int = 50) -> int:
    """``root/ptb_data/ptb.{train,valid,test}.txt`` as Mikolov's PTB files: lines of space-separated
    words, a space at each end, ``<unk>`` among the words. The words follow a chain a language model
    learns: with probability 0.3 the fixed successor of the word before, else a draw from Zipf's law
    (exponent 2: frequent words, which a model learns first).
    Sized for PTB-LSTM.py's batches of 20 x 35 words: ``train_steps`` batches in ptb.train.txt,
    ``other_steps`` in the others. Returns the vocabulary the script builds (``vocab`` words and ``<eos>``)."""
    folder = os.path.join(root, "ptb_data")
    os.makedirs(folder, exist_ok=True)
    words = [f"w{i}" for i in range(vocab - 1)] + ["<unk>"]
    zipf = 1.0 / np.arange(1, vocab + 1) ** 2.0
    zipf /= zipf.sum()
    successor = np.random.RandomState(0).permutation(vocab)
    for seed, (name, steps) in enumerate((("train", train_steps), ("valid", other_steps), ("test", other_steps))):
        rng = np.random.RandomState(60 + seed)
        w, line, lines = 0, [], []
        for _ in range(20 * 35 * steps + 40):
            w = successor[w] if rng.rand() < 0.3 else rng.choice(vocab, p=zipf)
            line.append(words[w])
            if len(line) == 12:
                lines.append(f" {' '.join(line)} \n")
                line = []
        with open(os.path.join(folder, f"ptb.{name}.txt"), "w") as f:
            f.write("".join(lines))
    return vocab + 1


#: the phonemes of write_timit's utterances (of TIMIT's 61): each a chord of two tones of its own
TIMIT_PHONEMES = ["aa", "iy", "s", "n", "sh", "k", "r", "eh"]


def write_timit(root: str, sizes: dict[str, int] | None = None, rate: int = 16000) -> dict[str, list[list[str]]]:
    """``root/<SPLIT>/DR<d>/<speaker>/<sentence>.wav`` and ``.PHN``, TIMIT's layout after its README's
    ``sox`` conversion to RIFF WAV (16 kHz, int16): ``sizes[SPLIT]`` utterances per split. An utterance
    is ``h#`` (silence: faint noise), 4 to 6 of ``TIMIT_PHONEMES`` (no phoneme twice in a row), ``h#``;
    a phoneme is 30 to 50 ms of its two tones plus noise, and each ``.PHN`` line is TIMIT's ``start end
    phoneme`` in samples. Returns each split's phoneme sequences, in the order written."""
    from scipy.io import wavfile
    tones = np.random.RandomState(70).uniform(200, 5500, size=(len(TIMIT_PHONEMES), 2))
    written: dict[str, list[list[str]]] = {}
    for seed, (split, n) in enumerate((sizes or {"TRAIN": 128, "TEST": 64}).items()):
        rng = np.random.RandomState(71 + seed)
        written[split] = []
        for i in range(n):
            kinds, count = [int(rng.randint(len(TIMIT_PHONEMES)))], rng.randint(4, 7)
            while len(kinds) < count:
                kinds.append(int((kinds[-1] + rng.randint(1, len(TIMIT_PHONEMES))) % len(TIMIT_PHONEMES)))
            parts, lines, start = [], [], 0
            for kind in [None, *kinds, None]:
                length = int(rate * rng.uniform(0.015, 0.03) if kind is None else rate * rng.uniform(0.03, 0.05))
                t = np.arange(length) / rate
                sound = rng.normal(0, 100 if kind is None else 300, length)
                if kind is not None:
                    phase = rng.uniform(0, 2 * np.pi, 2)
                    sound += 3000 * np.sin(2 * np.pi * tones[kind, :, None] * t + phase[:, None]).sum(0)
                parts.append(sound)
                lines.append(f"{start} {start + length} {'h#' if kind is None else TIMIT_PHONEMES[kind]}\n")
                start += length
            folder = os.path.join(root, split, f"DR{1 + i % 2}", f"FAKE{i // 10}")
            os.makedirs(folder, exist_ok=True)
            wavfile.write(os.path.join(folder, f"SX{i}.wav"), rate, np.concatenate(parts).astype(np.int16))
            with open(os.path.join(folder, f"SX{i}.PHN"), "w") as f:
                f.write("".join(lines))
            written[split].append([line.split()[-1] for line in lines])
    return written
