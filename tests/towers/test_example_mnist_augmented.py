"""examples/mnist_augmented.py trains, end to end in a subprocess, on a small MNIST written in
the real idx.gz format into tmp_path (``--data-dir``): dataset.Mnist reads it,
AugmentImageComponent shifts it, and the validation error ends far below chance.

The images are learnable on purpose (random ones, as tests/dataflow/dataset_files.py writes,
would not train): each class is a fixed pattern of 7x7 blocks on a 4x4 grid, with noise.
"""
from __future__ import annotations

import gzip
import json
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
FILES = {"train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
         "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")}


def block_digits(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` 28x28 uint8 images of 10 classes (one block pattern each, the same for every seed)."""
    patterns = np.random.RandomState(1234).rand(10, 4, 4) < 0.5
    rng = np.random.RandomState(seed)
    labels = rng.randint(0, 10, size=n).astype(np.uint8)
    blocks = np.kron(patterns[labels], np.ones((7, 7))) * rng.uniform(150, 255, size=(n, 1, 1))
    images = np.clip(blocks + rng.normal(0, 30, size=blocks.shape), 0, 255).astype(np.uint8)
    return images, labels


def write_idx_gz(directory: Path, split: str, images: np.ndarray, labels: np.ndarray) -> None:
    """MNIST's format: a big-endian header (magic 2051 / 2049, counts, sizes), then the bytes."""
    image_name, label_name = FILES[split]
    n, rows, cols = images.shape
    with gzip.open(directory / image_name, "wb") as f:
        f.write(struct.pack(">IIII", 2051, n, rows, cols) + images.tobytes())
    with gzip.open(directory / label_name, "wb") as f:
        f.write(struct.pack(">II", 2049, n) + labels.tobytes())


def test_mnist_augmented_trains_on_local_idx_files(tmp_path):
    data = tmp_path / "mnist_data"
    data.mkdir()
    write_idx_gz(data, "train", *block_digits(640, seed=0))
    write_idx_gz(data, "test", *block_digits(200, seed=1))
    logdir = tmp_path / "log"

    result = subprocess.run([sys.executable, str(ROOT / "examples" / "mnist_augmented.py"), "--data-dir", str(data),
                             "--epochs", "2", "--batch-size", "32", "--logdir", str(logdir)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]

    records = [json.loads(line) for line in (logdir / "stats.jsonl").read_text().splitlines()]
    epochs = [r for r in records if "validation_error" in r]
    assert [r["epoch_num"] for r in epochs] == [1, 2], records
    assert records[-1]["global_step"] == 2 * 20, "640 images in batches of 32: 20 steps per epoch"
    errors = [r["validation_error"] for r in epochs]
    # 200 test images of 10 classes: chance is 0.9
    assert errors[-1] < 0.3, f"validation error {errors} after 2 epochs; expected well below chance (0.9)"
    costs = [r["validation_cost"] for r in epochs]
    assert costs[-1] < costs[0] < np.log(10) + 0.5, f"validation cost {costs} should fall from about ln(10)"
    train_costs = [r["cost"] for r in epochs]   # the moving average of the training cost
    assert train_costs[-1] < train_costs[0], f"the training cost should fall, got {train_costs}"
    assert f"final validation error: {errors[-1]:.4f}" in result.stdout
