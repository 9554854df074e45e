"""trainstack.dataflow.dataset's image readers on small files: SVHNDigit (.mat), ILSVRC12Files
and ILSVRC12 (a val/ directory and caffe's list files), BSDS500 (images and groundTruth .mat)."""
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


def test_svhn_reads_mat_file_with_ten_as_zero(tmp_path):
    pytest.importorskip("scipy.io")
    images, labels = dataset_files.write_svhn(tmp_path, "test", n=12, seed=2)
    ds = dataset.SVHNDigit("test", data_dir=str(tmp_path), shuffle=False)
    ds.reset_state()
    points = list(ds)
    assert len(ds) == 12
    np.testing.assert_array_equal(np.stack([p[0] for p in points]), images)
    assert [int(p[1]) for p in points] == labels.tolist() and labels[0] == 0 and labels[10] == 0
    np.testing.assert_allclose(dataset.SVHNDigit.get_per_pixel_mean(("test",), data_dir=str(tmp_path)),
                               images.mean(axis=0))


def test_svhn_missing_file_names_it(tmp_path):
    pytest.importorskip("scipy.io")
    with pytest.raises(dataset.DatasetNotFoundError, match="extra_32x32.mat") as info:
        dataset.SVHNDigit("extra", data_dir=str(tmp_path))
    assert "http://ufldl.stanford.edu/housenumbers/extra_32x32.mat" in str(info.value)


def test_svhn_without_scipy_names_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "scipy.io", None)
    with pytest.raises(ImportError, match="SVHNDigit needs scipy: pip install scipy"):
        dataset.SVHNDigit("train", data_dir=str(tmp_path / "new"))


@pytest.mark.parametrize("structure", ["original", "train"])
def test_ilsvrc12_files_and_images(tmp_path, structure):
    pytest.importorskip("cv2")
    root, meta, entries = dataset_files.write_ilsvrc(tmp_path, n_val=5, structure=structure)
    synsets = ["n01440764", "n01443537", "n01484850"]
    files = dataset.ILSVRC12Files(root, "val", meta_dir=meta)   # the structure is guessed
    assert not files.shuffle
    files.reset_state()
    expected = [os.path.join(root, "val", name if structure == "original" else os.path.join(synsets[label], name))
                for name, label, _ in entries]
    assert [tuple(p) for p in files] == list(zip(expected, [label for _, label, _ in entries]))
    images = dataset.ILSVRC12(root, "val", meta_dir=meta, shuffle=False)
    images.reset_state()
    for (img, label), (_, want_label, want) in zip(images, entries):
        assert img.dtype == np.uint8 and label == want_label
        np.testing.assert_array_equal(img, want)
    meta_obj = dataset.ILSVRCMeta(meta)
    assert meta_obj.get_synset_1000() == dict(enumerate(synsets))
    assert meta_obj.get_synset_words_1000()[2] == "n01484850 word2"


def test_ilsvrc12_shuffle_and_errors(tmp_path):
    pytest.importorskip("cv2")
    root, meta, entries = dataset_files.write_ilsvrc(tmp_path, n_val=6)
    files = dataset.ILSVRC12Files(root, "val", meta_dir=meta, shuffle=True)
    files.reset_state()
    files.rng = np.random.RandomState(3)
    order = np.arange(6)
    np.random.RandomState(3).shuffle(order)
    assert [os.path.basename(p[0]) for p in files] == [entries[k][0] for k in order]
    with pytest.raises(FileNotFoundError, match="expected <dir>/train/"):
        dataset.ILSVRC12Files(root, "train", meta_dir=meta)
    os.remove(os.path.join(root, "val", entries[0][0]))
    with pytest.raises(FileNotFoundError, match=entries[0][0]):
        dataset.ILSVRC12Files(root, "val", meta_dir=meta)
    with pytest.raises(dataset.DatasetNotFoundError, match="caffe_ilsvrc12.tar.gz"):
        dataset.ILSVRCMeta(str(tmp_path / "no_meta"))


def test_bsds500_reads_images_and_averaged_boundaries(tmp_path):
    pytest.importorskip("cv2")
    pytest.importorskip("scipy.io")
    expected = dataset_files.write_bsds(tmp_path, ["3096", "8023"])
    ds = dataset.BSDS500("val", data_dir=str(tmp_path), shuffle=False)
    ds.reset_state()
    points = list(ds)
    assert len(points) == 2
    for (img, edges), (want_img, want_edges) in zip(points, expected):
        assert img.shape == (321, 481, 3) and edges.shape == (321, 481) and edges.dtype == np.float32
        np.testing.assert_array_equal(img, want_img)
        np.testing.assert_array_equal(edges, want_edges)
