"""tensorpack 0.11's ``TinyImageNet``, ``Places365Standard`` and ``Caltech101Silhouettes`` and this layer's read
the same tiny files, written in each dataset's real layout and format, and yield the same datapoints in the
same order (the same seeded ``rng`` where they shuffle)."""
from __future__ import annotations

import numpy as np
import pytest

cv2 = pytest.importorskip("cv2")
scipy_io = pytest.importorskip("scipy.io")
tp_dataset = pytest.importorskip("tensorpack.dataflow.dataset")

from trainstack.tensorpack._replaced import is_stand_in  # noqa: E402
from trainstack.tensorpack.dataflow import dataset  # noqa: E402


def points(ds, seed=None):
    """Two passes of ``ds`` (the rng moves on between them)."""
    ds.reset_state()
    if seed is not None:
        ds.rng = np.random.RandomState(seed)
    return [list(dp) for dp in ds] + [list(dp) for dp in ds]


def assert_same(ours, theirs):
    assert len(ours) == len(theirs) > 0
    for a, b in zip(ours, theirs):
        assert len(a) == len(b) == 2
        for x, y in zip(a, b):
            if isinstance(y, np.ndarray):
                assert isinstance(x, np.ndarray) and x.dtype == y.dtype and x.shape == y.shape
                np.testing.assert_array_equal(x, y)
            else:
                assert type(x) is type(y) and x == y


def write_image(path, rng, size):
    path.parent.mkdir(parents=True, exist_ok=True)
    assert cv2.imwrite(str(path), rng.randint(0, 256, size=(size, size, 3), dtype=np.uint8))


@pytest.fixture(scope="module")
def tiny_imagenet(tmp_path_factory):
    """200 wnids; 2 training images in each of 3 classes, the other classes' image folders empty; 5 val images."""
    root = tmp_path_factory.mktemp("tiny-imagenet-200")
    rng = np.random.RandomState(0)
    wnids = [f"n{i:08d}" for i in range(200)]
    (root / "wnids.txt").write_text("\n".join(wnids) + "\n")
    for k, wnid in enumerate(wnids):
        (root / "train" / wnid / "images").mkdir(parents=True)
        if k in (0, 7, 199):
            for j in range(2):
                write_image(root / "train" / wnid / "images" / f"{wnid}_{j}.JPEG", rng, 64)
    lines = []
    for j, k in enumerate([5, 0, 199, 5, 42]):
        write_image(root / "val" / "images" / f"val_{j}.JPEG", rng, 64)
        lines.append(f"val_{j}.JPEG\t{wnids[k]}\t0\t0\t63\t63")
    (root / "val" / "val_annotations.txt").write_text("\n".join(lines) + "\n")
    return root


@pytest.mark.parametrize("name,shuffle", [("train", None), ("train", False), ("val", None), ("val", True)])
def test_tiny_imagenet_yields_tensorpacks_datapoints(tiny_imagenet, name, shuffle):
    ours = dataset.TinyImageNet(str(tiny_imagenet), name, shuffle=shuffle)
    theirs = tp_dataset.TinyImageNet(str(tiny_imagenet), name, shuffle=shuffle)
    assert not is_stand_in(dataset.TinyImageNet)
    assert ours.shuffle == theirs.shuffle == (name == "train" if shuffle is None else shuffle)
    assert len(ours) == len(theirs) == (6 if name == "train" else 5)
    got = points(ours, 3)
    assert_same(got, points(theirs, 3))
    if name == "val":
        assert sorted(dp[1] for dp in got[:5]) == [0, 5, 5, 42, 199]
        assert got[0][0].shape == (64, 64, 3) and got[0][0].dtype == np.uint8


def test_tiny_imagenet_refuses_what_tensorpack_asserts(tmp_path):
    with pytest.raises(ValueError, match="'train' or 'val'"):
        dataset.TinyImageNet(str(tmp_path), "test")
    (tmp_path / "wnids.txt").write_text("n0\nn1\n")
    with pytest.raises(ValueError, match="lists 2 classes, not 200"):
        dataset.TinyImageNet(str(tmp_path), "val")


@pytest.fixture(scope="module")
def places(tmp_path_factory):
    """The "easy directory structure": train.txt / val.txt listing <split>/<label>/<file> (labels out of order)."""
    root = tmp_path_factory.mktemp("places365_standard")
    rng = np.random.RandomState(1)
    for split, entries in {"train": [("bakery", 0), ("airfield", 0), ("bakery", 1), ("canyon", 0)],
                           "val": [("zoo", 0), ("airfield", 1), ("zoo", 2)]}.items():
        lines = []
        for label, j in entries:
            rel = f"{split}/{label}/{j:08d}.jpg"
            write_image(root / rel, rng, 16)
            lines.append(rel)
        (root / f"{split}.txt").write_text("\n".join(lines) + "\n")
    return root


@pytest.mark.parametrize("name,shuffle", [("train", None), ("val", None), ("val", True)])
def test_places365_yields_tensorpacks_datapoints_and_label_names(places, name, shuffle):
    ours = dataset.Places365Standard(str(places), name, shuffle=shuffle)
    theirs = tp_dataset.Places365Standard(str(places), name, shuffle=shuffle)
    assert ours.get_label_names() == theirs.get_label_names()
    assert len(ours) == len(theirs) == (4 if name == "train" else 3)
    got = points(ours, 5)
    assert_same(got, points(theirs, 5))
    labels = ours.get_label_names()
    assert labels == sorted(labels) and len(labels) == len({dp[1] for dp in got})


@pytest.fixture(scope="module")
def caltech_dir(tmp_path_factory):
    """caltech101_silhouettes_28_split1.mat with the published split sizes (tensorpack reshapes to exactly those):
    binary images as rows of 784 doubles and 1-based labels as columns, as in Marlin's file."""
    root = tmp_path_factory.mktemp("caltech101_data")
    rng = np.random.RandomState(2)
    mat = {}
    for split, n in {"train": 4100, "test": 2307, "val": 2264}.items():
        mat[f"{split}_data"] = (rng.rand(n, 784) > 0.5).astype(np.float64)
        mat[f"{split}_labels"] = rng.randint(1, 102, size=(n, 1)).astype(np.float64)
    scipy_io.savemat(str(root / "caltech101_silhouettes_28_split1.mat"), mat)
    return root


@pytest.mark.parametrize("name,shuffle", [("train", True), ("test", False), ("val", True)])
def test_caltech101_silhouettes_yields_tensorpacks_datapoints(caltech_dir, name, shuffle):
    ours = dataset.Caltech101Silhouettes(name, shuffle=shuffle, dir=str(caltech_dir))
    theirs = tp_dataset.Caltech101Silhouettes(name, shuffle=shuffle, dir=str(caltech_dir))
    assert len(ours) == len(theirs) == {"train": 4100, "test": 2307, "val": 2264}[name]
    got = points(ours, 11)
    want = points(theirs, 11)
    assert len(got) == len(want)
    np.testing.assert_array_equal(np.stack([dp[0] for dp in got]), np.stack([dp[0] for dp in want]))
    np.testing.assert_array_equal(np.array([dp[1] for dp in got]), np.array([dp[1] for dp in want]))
    assert type(got[0][1]) is type(want[0][1]) and got[0][0].shape == (28, 28)
    assert 0 <= min(dp[1] for dp in got) and max(dp[1] for dp in got) <= 100


def test_caltech101_silhouettes_names_a_bad_split():
    with pytest.raises(ValueError, match="'train', 'test' or 'val'"):
        dataset.Caltech101Silhouettes("extra")
