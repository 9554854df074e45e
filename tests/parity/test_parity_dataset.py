"""tensorpack 0.11's dataset readers and trainstack.dataflow.dataset's read the same small files
(written in the real formats) and give the same datapoints, dtypes and order, shuffled by the
same seeded ``rng``."""
from __future__ import annotations

import os
import shutil
import sys
import tempfile

import numpy as np
import pytest

DATAFLOW_TESTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "dataflow")
if DATAFLOW_TESTS not in sys.path:
    sys.path.insert(0, DATAFLOW_TESTS)
import dataset_files  # noqa: E402

tp_dataset = pytest.importorskip("tensorpack.dataflow.dataset")
from trainstack.dataflow import dataset  # noqa: E402


def points(ds, seed=None):
    ds.reset_state()
    if seed is not None:
        ds.rng = np.random.RandomState(seed)
    return [list(dp) for dp in ds] + [list(dp) for dp in ds]   # two passes: the rng moves on


def assert_same(ours, theirs):
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            if isinstance(y, np.ndarray):
                assert isinstance(x, np.ndarray) and x.dtype == y.dtype and x.shape == y.shape
                np.testing.assert_array_equal(x, y)
            else:
                assert type(x) is type(y) and x == y


@pytest.mark.parametrize("name", ["Mnist", "FashionMnist"])
@pytest.mark.parametrize("split", ["train", "test"])
@pytest.mark.parametrize("shuffle", [False, True])
def test_mnist(tmp_path, name, split, shuffle):
    dataset_files.write_mnist(tmp_path, split, n=11, seed=4)
    ours = getattr(dataset, name)(split, shuffle=shuffle, dir=str(tmp_path))
    theirs = getattr(tp_dataset, name)(split, shuffle=shuffle, dir=str(tmp_path))
    assert len(ours) == len(theirs) == 11
    assert_same(points(ours, 9), points(theirs, 9))


@pytest.fixture(scope="module")
def cifar_dir():
    """CIFAR-10 and -100 test splits of 10000 images each: tensorpack reads exactly that many.

    In a folder of its own under /tmp, whose path has no "train" in it: tensorpack 0.11 takes a
    CIFAR-100 file for the 50000-image training file when its *whole path* contains "train"
    (``IMG_NUM = 50000 if 'train' in fname``), so under a clone named after the project it would
    read the test file wrongly. ``test_cifar100_tensorpacks_path_quirk`` tests that on purpose.
    """
    root = tempfile.mkdtemp(prefix="cifar-", dir="/tmp")
    try:
        assert "train" not in root
        dataset_files.write_cifar(root, 10, per_file=10000, seed=1, splits=("test",))
        dataset_files.write_cifar(root, 100, per_file=10000, seed=2, splits=("test",))
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize("name", ["Cifar10", "Cifar100"])
def test_cifar(cifar_dir, name):
    ours = getattr(dataset, name)("test", shuffle=True, dir=cifar_dir)
    theirs = getattr(tp_dataset, name)("test", shuffle=True, dir=cifar_dir)
    assert len(ours) == len(theirs) == 10000
    assert ours.get_label_names() == theirs.get_label_names()
    assert_same(points(ours, 3), points(theirs, 3))
    np.testing.assert_allclose(ours.get_per_channel_mean(("test",)), theirs.get_per_channel_mean(("test",)),
                               rtol=1e-6)


def test_cifar100_tensorpacks_path_quirk(cifar_dir, tmp_path):
    """Documented difference: the same CIFAR-100 test file, reached through a folder named
    ``trainset``. tensorpack 0.11 then expects 50000 images in it and fails; trainstack reads
    the file's own 10000, whatever the folder is called."""
    quirk = tmp_path / "trainset"
    quirk.mkdir()
    os.symlink(os.path.join(cifar_dir, "cifar-100-python"), quirk / "cifar-100-python")
    with pytest.raises(IndexError):
        tp_dataset.Cifar100("test", shuffle=False, dir=str(quirk))
    ours = dataset.Cifar100("test", shuffle=False, dir=str(quirk))
    assert len(ours) == 10000
    assert_same(points(ours), points(dataset.Cifar100("test", shuffle=False, dir=cifar_dir)))


def test_svhn(tmp_path):
    pytest.importorskip("scipy.io")
    dataset_files.write_svhn(tmp_path, "test", n=13, seed=5)
    tp_dataset.SVHNDigit._Cache.clear()   # tensorpack caches by split name, whatever the directory
    ours = dataset.SVHNDigit("test", data_dir=str(tmp_path))
    theirs = tp_dataset.SVHNDigit("test", data_dir=str(tmp_path))
    tp_dataset.SVHNDigit._Cache.clear()
    assert_same(points(ours, 1), points(theirs, 1))


@pytest.mark.parametrize("structure", ["original", "train"])
@pytest.mark.parametrize("files_only", [True, False])
def test_ilsvrc12(tmp_path, structure, files_only):
    pytest.importorskip("cv2")
    root, meta, _ = dataset_files.write_ilsvrc(tmp_path, n_val=8, seed=2, structure=structure)
    name = "ILSVRC12Files" if files_only else "ILSVRC12"
    ours = getattr(dataset, name)(root, "val", meta_dir=meta, shuffle=True)
    theirs = getattr(tp_dataset, name)(root, "val", meta_dir=meta, shuffle=True)
    assert ours.imglist == theirs.imglist
    assert_same(points(ours, 4), points(theirs, 4))
    assert dataset.ILSVRCMeta(meta).get_synset_words_1000() == tp_dataset.ILSVRCMeta(meta).get_synset_words_1000()


def test_bsds500(tmp_path):
    pytest.importorskip("cv2")
    pytest.importorskip("scipy.io")
    dataset_files.write_bsds(tmp_path, ["3096", "8023", "12074"], seed=1)
    ours = dataset.BSDS500("val", data_dir=str(tmp_path), shuffle=False)
    theirs = tp_dataset.BSDS500("val", data_dir=str(tmp_path), shuffle=False)
    # tensorpack takes the directory's order, trainstack sorts the names: compare sorted by content
    key = lambda dp: dp[0].tobytes()  # noqa: E731
    assert_same(sorted(points(ours), key=key), sorted(points(theirs), key=key))
