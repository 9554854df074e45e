"""tensorpack 0.11's ``imgaug.deform`` (``GaussianDeform``, ``GaussianMap``, ``np_sample``) and ``imgaug.external``
(``IAAugmentor``, ``Albumentations``) and this layer's give the same outputs for the same inputs and seed; the
external wrappers are run on duck-typed fakes of the libraries' objects, the same fakes for both."""
from __future__ import annotations

import sys
import types

import numpy as np
import pytest

tp_deform = pytest.importorskip("tensorpack.dataflow.imgaug.deform")
tp_external = pytest.importorskip("tensorpack.dataflow.imgaug.external")

from trainstack.tensorpack.dataflow import imgaug  # noqa: E402
from trainstack.tensorpack.dataflow.imgaug import deform, external  # noqa: E402


def image(seed=0, h=12, w=10, dtype=np.uint8):
    return np.random.RandomState(seed).randint(0, 256, size=(h, w, 3)).astype(dtype)


def test_gaussian_map_is_tensorpacks_formula():
    ours = deform.GaussianMap((6, 8), sigma=0.3).get_gaussian_weight((0.25, 0.5))
    theirs = tp_deform.GaussianMap((6, 8), sigma=0.3).get_gaussian_weight((0.25, 0.5))
    y, x = np.mgrid[:6, :8]
    np.testing.assert_allclose(ours, np.exp(-((y / 6 - 0.25) ** 2 + (x / 8 - 0.5) ** 2) / 0.3), rtol=1e-6)
    np.testing.assert_array_equal(ours, theirs)
    assert ours.dtype == theirs.dtype == np.float32
    with pytest.raises(ValueError, match=r"\(height, width\)"):
        deform.GaussianMap((6, 8, 3))


def test_np_sample_is_bilinear_sampling_clipped_to_the_image():
    scipy_ndimage = pytest.importorskip("scipy.ndimage")
    img = image(1).astype(np.float64)
    coords = np.random.RandomState(2).uniform(-2, 13, size=(5, 7, 2))
    ours = deform.np_sample(img, coords)
    np.testing.assert_array_equal(ours, tp_deform.np_sample(img, coords))
    clipped = np.clip(coords, 0, [img.shape[0] - 1, img.shape[1] - 1])
    for c in range(3):
        want = scipy_ndimage.map_coordinates(img[:, :, c], [clipped[..., 0], clipped[..., 1]], order=1)
        np.testing.assert_allclose(ours[:, :, c], want, rtol=1e-10, atol=1e-9)


@pytest.mark.parametrize("randrange", [None, 3.0])
def test_gaussian_deform_gives_tensorpacks_images_for_the_same_seed(randrange):
    anchors = [(0.2, 0.2), (0.7, 0.5), (0.5, 0.9)]
    ours = deform.GaussianDeform(anchors, (12, 10), sigma=0.4, randrange=randrange)
    theirs = tp_deform.GaussianDeform(anchors, (12, 10), sigma=0.4, randrange=randrange)
    ours.rng = np.random.RandomState(7)
    theirs.rng = np.random.RandomState(7)
    img = image(3).astype(np.float32)
    outs = []
    for _ in range(3):
        a, b = ours.augment(img), theirs.augment(img)
        np.testing.assert_array_equal(a, b)
        outs.append(a)
    assert outs[0].shape == img.shape and not np.allclose(outs[0], img) and not np.allclose(outs[0], outs[1])
    assert ours.randrange == theirs.randrange == (12 / 8 if randrange is None else randrange)


def test_deform_names_import_from_the_package_too():
    assert imgaug.GaussianDeform is deform.GaussianDeform and imgaug.np_sample is deform.np_sample


class FakeKeypoint:
    def __init__(self, x, y):
        self.x, self.y = x, y


class FakeKeypointsOnImage:
    def __init__(self, keypoints, shape):
        self.keypoints, self.shape = keypoints, shape


class FakeIAAugmenter:
    """imgaug's Augmenter protocol: ``to_deterministic()`` draws a shift from the augmenter's own generator; the
    deterministic copy shifts images (``np.roll``) and keypoints by it."""

    def __init__(self, seed, shift=None):
        self.random = np.random.RandomState(seed)
        self.shift = shift

    def to_deterministic(self):
        return FakeIAAugmenter(0, shift=tuple(int(s) for s in self.random.randint(-3, 4, size=2)))

    def augment_image(self, img):
        return np.roll(img, self.shift, axis=(0, 1))

    def augment_keypoints(self, kps_list):
        dy, dx = self.shift
        return [FakeKeypointsOnImage([FakeKeypoint(p.x + dx, p.y + dy) for p in kps.keypoints], kps.shape)
                for kps in kps_list]


@pytest.fixture
def fake_imgaug(monkeypatch):
    """A module named ``imgaug`` (aleju's library) with its keypoint classes, for this test only."""
    module = types.ModuleType("imgaug")
    module.Keypoint, module.KeypointsOnImage = FakeKeypoint, FakeKeypointsOnImage
    monkeypatch.setitem(sys.modules, "imgaug", module)
    return module


def test_iaaugmentor_gives_tensorpacks_images_and_coordinates(fake_imgaug):
    ours = external.IAAugmentor(FakeIAAugmenter(5))
    theirs = tp_external.IAAugmentor(FakeIAAugmenter(5))
    assert imgaug.IAAugmentor is external.IAAugmentor
    coords = np.array([[1.0, 2.0], [4.5, 0.0]])
    for k in range(3):
        img = image(k)
        t_ours, t_theirs = ours.get_transform(img), theirs.get_transform(img)
        out = t_ours.apply_image(img)
        np.testing.assert_array_equal(out, t_theirs.apply_image(img))
        moved = t_ours.apply_coords(coords)
        np.testing.assert_array_equal(moved, t_theirs.apply_coords(coords))
        dy, dx = t_ours.aug.shift  # the image and its coordinates moved by the same draw
        np.testing.assert_array_equal(out, np.roll(img, (dy, dx), axis=(0, 1)))
        np.testing.assert_array_equal(moved, coords + [dx, dy])


class FakeAlbumentationsTransform:
    """albumentations' BasicTransform protocol as tensorpack calls it: ``get_params()`` (its own generator) and
    ``apply(img, **params)``."""

    def __init__(self, seed):
        self.random = np.random.RandomState(seed)

    def get_params(self):
        return {"factor": float(self.random.uniform(0.5, 1.5)), "flip": bool(self.random.rand() < 0.5)}

    def apply(self, img, factor, flip):
        out = np.clip(img.astype(np.float32) * factor, 0, 255).astype(img.dtype)
        return out[:, ::-1] if flip else out


def test_albumentations_gives_tensorpacks_images(monkeypatch):
    monkeypatch.setitem(sys.modules, "albumentations", types.ModuleType("albumentations"))
    ours = external.Albumentations(FakeAlbumentationsTransform(9))
    theirs = tp_external.Albumentations(FakeAlbumentationsTransform(9))
    for k in range(4):
        img = image(k)
        a, b = ours.augment(img), theirs.augment(img)
        np.testing.assert_array_equal(a, b)
        assert a.shape == img.shape and not np.array_equal(a, img)


@pytest.mark.parametrize("name,library", [("Albumentations", "albumentations"), ("IAAugmentor", "imgaug")])
def test_a_missing_library_is_named_at_construction(monkeypatch, name, library):
    monkeypatch.setitem(sys.modules, library, None)  # import raises ImportError
    with pytest.raises(ImportError, match=rf"{name} needs {library}, which is not installed: pip install {library}"):
        getattr(external, name)(object())
