"""trainstack.dataflow.dataset.Mnist/FashionMnist read tiny idx.gz files written here: values,
dtypes, order, shuffling by ``self.rng``, where they look for the files, and bad files."""
from __future__ import annotations

import gzip
import os
import struct
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)
import dataset_files  # noqa: E402

from trainstack.dataflow import dataset  # noqa: E402
from trainstack.dataflow.dataset import downloads as download_mod  # noqa: E402


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    def refuse(url, timeout=60.0):
        raise OSError(f"no network in tests ({url})")
    monkeypatch.setattr(download_mod, "_urlopen", refuse)


@pytest.mark.parametrize("split", ["train", "test"])
def test_mnist_reads_idx_files_in_order(tmp_path, split):
    images, labels = dataset_files.write_mnist(tmp_path, split, n=7, seed=3)
    ds = dataset.Mnist(split, shuffle=False, dir=str(tmp_path))
    ds.reset_state()
    points = list(ds)
    assert len(ds) == len(points) == 7
    for (img, label), want_img, want_label in zip(points, images, labels):
        assert img.shape == (28, 28) and img.dtype == np.float32
        np.testing.assert_array_equal(img, want_img.astype(np.float32) / 255.0)
        assert label.dtype == np.uint8 and label == want_label


def test_mnist_shuffles_with_its_rng_as_tensorpack(tmp_path):
    images, labels = dataset_files.write_mnist(tmp_path, "train", n=9, seed=1)
    ds = dataset.Mnist("train", dir=str(tmp_path))   # shuffle=True is the default
    ds.reset_state()
    ds.rng = np.random.RandomState(42)
    order = list(range(9))
    np.random.RandomState(42).shuffle(order)          # tensorpack: self.rng.shuffle(list of indices)
    assert [int(label) for _, label in ds] == [int(labels[k]) for k in order]
    second = [int(label) for _, label in ds]          # the next pass draws a new order from the same rng
    rng = np.random.RandomState(42)
    rng.shuffle(list(range(9)))
    again = list(range(9))
    rng.shuffle(again)
    assert second == [int(labels[k]) for k in again]


def test_mnist_iterated_before_reset_state_says_so(tmp_path):
    dataset_files.write_mnist(tmp_path, "test", n=2)
    with pytest.raises(RuntimeError, match="reset_state"):
        next(iter(dataset.Mnist("test", dir=str(tmp_path))))


@pytest.mark.parametrize("env", [{"TENSORPACK_DATASET": "tp"}, {"TRAINSTACK_DATASET": "ts", "TENSORPACK_DATASET": "tp"}])
def test_default_directory_is_tensorpacks(tmp_path, monkeypatch, env):
    for var in ("TRAINSTACK_DATASET", "TENSORPACK_DATASET"):
        monkeypatch.delenv(var, raising=False)
    for var, sub in env.items():
        monkeypatch.setenv(var, str(tmp_path / sub))
    root = tmp_path / ("ts" if "TRAINSTACK_DATASET" in env else "tp")
    _, labels = dataset_files.write_mnist(root / "mnist_data", "test", n=3, seed=5)
    _, fashion_labels = dataset_files.write_mnist(root / "fashion_mnist_data", "test", n=4, seed=6)
    ds = dataset.Mnist("test", shuffle=False)
    fashion = dataset.FashionMnist("test", shuffle=False)
    for d in (ds, fashion):
        d.reset_state()
    assert [int(x[1]) for x in ds] == labels.tolist()
    assert [int(x[1]) for x in fashion] == fashion_labels.tolist()
    assert fashion.get_label_names()[9] == "Ankle boot"
    assert dataset.get_dataset_path("mnist_data") == str(root / "mnist_data")


def test_home_is_the_last_resort(monkeypatch, tmp_path):
    for var in ("TRAINSTACK_DATASET", "TENSORPACK_DATASET"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert dataset.get_dataset_path("cifar10_data") == os.path.join(str(tmp_path), "tensorpack_data", "cifar10_data")


def test_missing_files_name_what_to_get_and_where(tmp_path):
    with pytest.raises(dataset.DatasetNotFoundError) as info:
        dataset.Mnist("train", dir=str(tmp_path / "nowhere"))
    message = str(info.value)
    assert "train-images-idx3-ubyte.gz" in message and "train-labels-idx1-ubyte.gz" in message
    assert str(tmp_path / "nowhere") in message and "http://yann.lecun.com/exdb/mnist/" in message
    assert not os.listdir(tmp_path / "nowhere")      # no half-written file left behind
    assert isinstance(info.value, FileNotFoundError)


def test_wrong_magic_and_truncated_files_are_refused(tmp_path):
    dataset_files.write_mnist(tmp_path, "test", n=3)
    with gzip.open(tmp_path / "t10k-labels-idx1-ubyte.gz", "wb") as f:
        f.write(struct.pack(">II", 2051, 3) + bytes(3))   # an image magic in a label file
    with pytest.raises(ValueError, match="magic number 2051.*expected 2049"):
        dataset.Mnist("test", dir=str(tmp_path))
    dataset_files.write_mnist(tmp_path, "test", n=3)
    with gzip.open(tmp_path / "t10k-images-idx3-ubyte.gz", "wb") as f:
        f.write(struct.pack(">IIII", 2051, 3, 28, 28) + bytes(28 * 28 * 2))
    with pytest.raises(ValueError, match="truncated"):
        dataset.Mnist("test", dir=str(tmp_path))


def test_count_mismatch_and_bad_split_are_refused(tmp_path):
    dataset_files.write_mnist(tmp_path, "test", n=3)
    labels_only = tmp_path / "other"
    dataset_files.write_mnist(labels_only, "test", n=4)
    os.replace(labels_only / "t10k-labels-idx1-ubyte.gz", tmp_path / "t10k-labels-idx1-ubyte.gz")
    with pytest.raises(ValueError, match="3 images but .* 4 labels"):
        dataset.Mnist("test", dir=str(tmp_path))
    with pytest.raises(ValueError, match="'train' or 'test', got 'val'"):
        dataset.Mnist("val", dir=str(tmp_path))
