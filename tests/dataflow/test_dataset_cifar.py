"""trainstack.dataflow.dataset.Cifar10/Cifar100 read small pickles in the original format:
layout (HWC uint8, int labels), file order, shuffling by ``self.rng``, means, label names."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)
import dataset_files  # noqa: E402

from trainstack.dataflow import dataset  # noqa: E402
from trainstack.dataflow.dataset import downloads  # noqa: E402


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    def refuse(url, timeout=60.0):
        raise OSError(f"no network in tests ({url})")
    monkeypatch.setattr(downloads, "_urlopen", refuse)


@pytest.mark.parametrize("cls,classnum", [(dataset.Cifar10, 10), (dataset.Cifar100, 100)])
@pytest.mark.parametrize("split", ["train", "test"])
def test_cifar_reads_pickles_in_order(tmp_path, cls, classnum, split):
    written = dataset_files.write_cifar(tmp_path, classnum, per_file=4, seed=classnum)
    ds = cls(split, shuffle=False, dir=str(tmp_path))
    ds.reset_state()
    points = list(ds)
    images, labels = written[split]
    assert len(ds) == len(points) == len(labels)
    assert len(points) == (4 * 5 if classnum == 10 and split == "train" else 4)
    for (img, label), want_img, want_label in zip(points, images, labels):
        assert img.shape == (32, 32, 3) and img.dtype == np.uint8
        np.testing.assert_array_equal(img, want_img)
        assert type(label) is int and label == want_label
    assert ds.get_label_names() == written["label_names"]


def test_cifar_shuffles_training_set_by_default_with_its_rng(tmp_path):
    written = dataset_files.write_cifar(tmp_path, 10, per_file=3, seed=1)
    train, test = dataset.Cifar10("train", dir=str(tmp_path)), dataset.Cifar10("test", dir=str(tmp_path))
    assert train.shuffle and not test.shuffle
    train.reset_state()
    train.rng = np.random.RandomState(7)
    order = np.arange(15)
    np.random.RandomState(7).shuffle(order)           # tensorpack: self.rng.shuffle(np.arange(n))
    images = written["train"][0]
    got = np.stack([img for img, _ in train])
    np.testing.assert_array_equal(got, images[order])


def test_cifar_means(tmp_path):
    written = dataset_files.write_cifar(tmp_path, 10, per_file=2, seed=2)
    ds = dataset.Cifar10("test", dir=str(tmp_path))
    both = np.concatenate([written["train"][0], written["test"][0]]).astype(np.float32)
    np.testing.assert_allclose(ds.get_per_pixel_mean(), both.mean(axis=0), rtol=1e-6)
    np.testing.assert_allclose(ds.get_per_channel_mean(("test",)),
                               written["test"][0].astype(np.float32).mean(axis=(0, 1, 2)), rtol=1e-5)


def test_cifar_default_directory_and_missing_files(tmp_path, monkeypatch):
    monkeypatch.delenv("TRAINSTACK_DATASET", raising=False)
    monkeypatch.setenv("TENSORPACK_DATASET", str(tmp_path))
    written = dataset_files.write_cifar(tmp_path / "cifar100_data", 100, per_file=2)
    ds = dataset.Cifar100("test")
    assert [label for _, label in ds.data] == written["test"][1]
    with pytest.raises(dataset.DatasetNotFoundError, match="cifar-10-python.tar.gz") as info:
        dataset.Cifar10("test")
    assert "http://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz" in str(info.value)
    assert str(tmp_path / "cifar10_data") in str(info.value)
    os.remove(tmp_path / "cifar100_data" / "cifar-100-python" / "test")
    with pytest.raises(FileNotFoundError, match="cifar-100-python/test"):
        dataset.Cifar100("test")


def test_cifar_extracts_a_downloaded_tarball(tmp_path, monkeypatch):
    import hashlib
    import io
    import tarfile
    src = tmp_path / "src"
    written = dataset_files.write_cifar(src, 10, per_file=2, seed=4)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(src / "cifar-10-batches-py", arcname="cifar-10-batches-py")
    body = buf.getvalue()

    class Response(io.BytesIO):
        headers = {"Content-Length": str(len(body))}
    monkeypatch.setattr(downloads, "_urlopen", lambda url, timeout=60.0: Response(body))
    from trainstack.dataflow.dataset import cifar
    monkeypatch.setitem(cifar._ARCHIVES, 10, dataset.RemoteFile(
        "cifar-10-python.tar.gz", "http://x/cifar-10-python.tar.gz", md5=hashlib.md5(body).hexdigest()))
    ds = dataset.Cifar10("test", dir=str(tmp_path / "dest"))
    np.testing.assert_array_equal(np.stack([x[0] for x in ds.data]), written["test"][0])
    assert sorted(os.listdir(tmp_path / "dest")) == ["cifar-10-batches-py", "cifar-10-python.tar.gz"]


def test_cifar_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="'train' or 'test', got 'val'"):
        dataset.Cifar10("val", dir=str(tmp_path))
    with pytest.raises(ValueError, match="10 or 100, got 20"):
        dataset.CifarBase("train", dir=str(tmp_path), cifar_classnum=20)
