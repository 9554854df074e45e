"""trainstack.dataflow.imgaug and the image dataflows, where no oracle is needed: OpenCV imported
on first use only, each worker process drawing its own (reproducible) random stream, the errors
bad input gets, ImageFromFile, and copy/catch_exceptions of the AugmentImage* dataflows.
(Pixel-for-pixel agreement with tensorpack 0.11 is tests/parity/test_parity_imgaug.py.)
"""
from __future__ import annotations

import logging
import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from trainstack.dataflow import (
    AugmentImageComponent,
    AugmentImageComponents,
    AugmentImageCoordinates,
    DataFromList,
    ImageFromFile,
    MapData,
    MultiProcessRunner,
    fix_rng_seed,
    imgaug,
)

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:  # worker processes import the helpers by module name
    sys.path.insert(0, HERE)
import df_workers  # noqa: E402

H, W = 32, 40
IMG = np.random.RandomState(0).randint(0, 256, size=(H, W, 3)).astype(np.uint8)


@pytest.fixture
def no_fixed_seed():
    fix_rng_seed(None)
    yield
    fix_rng_seed(None)


# --- imports ---------------------------------------------------------------------------------

def test_import_trainstack_dataflow_imports_no_opencv_until_an_augmentor_runs():
    code = textwrap.dedent("""
        import sys
        import trainstack.dataflow as df
        from trainstack.dataflow import imgaug
        assert "cv2" not in sys.modules, "import trainstack.dataflow imported cv2"
        assert "tensorflow" not in sys.modules, "import trainstack.dataflow imported tensorflow"
        augs = imgaug.AugmentorList([imgaug.Flip(horiz=True), imgaug.Resize((8, 10)), imgaug.Brightness(5)])
        ds = df.AugmentImageComponent(df.DataFromList([[0]]), augs)
        assert "cv2" not in sys.modules, "building augmentors imported cv2"
        import numpy as np
        out = augs.augment(np.zeros((4, 5, 3), np.uint8))
        assert out.shape == (8, 10, 3) and "cv2" in sys.modules
        print("ok")
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_opencv_constants_of_the_signatures_are_opencvs():
    cv2 = pytest.importorskip("cv2", reason="the constants are compared with OpenCV's (the imgaug extra)")
    from trainstack.dataflow.imgaug import _cv2

    for name in ("INTER_NEAREST", "INTER_LINEAR", "INTER_CUBIC", "INTER_AREA", "BORDER_CONSTANT",
                 "BORDER_REPLICATE", "COLOR_BGR2GRAY", "COLOR_RGB2GRAY"):
        assert getattr(_cv2, name) == getattr(cv2, name), name


def test_imgaug_exports_only_its_public_names():
    assert len(set(imgaug.__all__)) == len(imgaug.__all__)
    public = {n for n in vars(imgaug) if not n.startswith("_")}
    modules = {"base", "transform", "meta", "misc", "crop", "geometry", "imgproc", "noise", "convert", "paste"}
    assert public - modules == set(imgaug.__all__)


# --- random streams in worker processes ------------------------------------------------------

def crop_offsets(n_per_worker, seed):
    """Run RandomCrop in 2 MultiProcessRunner workers; {worker pid: [(y0, x0), ...]}."""
    positions = np.arange(H * W, dtype=np.float32).reshape(H, W)  # each pixel's value is its position
    ds = DataFromList([[positions] for _ in range(10)], shuffle=False)
    ds = AugmentImageComponent(ds, [imgaug.RandomCrop((8, 8))])
    ds = MapData(ds, df_workers.tag_with_pid)
    fix_rng_seed(seed)
    try:
        by_pid: dict[int, list[tuple[int, int]]] = {}
        with MultiProcessRunner(ds, num_prefetch=4, num_proc=2) as runner:
            runner.reset_state()
            while len(by_pid) < 2 or min(len(v) for v in by_pid.values()) < n_per_worker:
                for crop, pid in runner:
                    y0, x0 = divmod(int(crop[0, 0]), W)
                    by_pid.setdefault(int(pid), []).append((y0, x0))
                assert len(by_pid) <= 2
    finally:
        fix_rng_seed(None)
    return {pid: v[:n_per_worker] for pid, v in by_pid.items()}


def assert_different_streams(streams):
    assert len(streams) == 2
    assert streams[0] != streams[1]
    # 825 possible offsets: two independent streams agree at a position about 1 time in 825
    same = sum(a == b for a, b in zip(*streams))
    assert same <= 2, streams


def test_two_workers_never_draw_the_same_random_crops():
    assert_different_streams(list(crop_offsets(12, None).values()))


def test_a_fixed_seed_makes_the_workers_streams_reproducible():
    """With fix_rng_seed, worker i seeds with seed + 1 + i: still a different stream per
    worker, and the same streams on a rerun."""
    first = sorted(crop_offsets(12, 77).values())
    assert_different_streams(first)
    assert sorted(crop_offsets(12, 77).values()) == first


def test_reset_state_reseeds_the_augmentors_of_a_dataflow(no_fixed_seed):
    ds = AugmentImageComponent(DataFromList([[IMG]] * 8, shuffle=False), [imgaug.RandomCrop((8, 8))])
    fix_rng_seed(5)
    ds.reset_state()
    first = [dp[0] for dp in ds]
    ds.reset_state()
    np.testing.assert_array_equal(np.stack([dp[0] for dp in ds]), np.stack(first))
    fix_rng_seed(None)
    ds.reset_state()
    assert not np.array_equal(np.stack([dp[0] for dp in ds]), np.stack(first))


def test_an_augmentor_unpickled_in_another_process_makes_its_own_generator(no_fixed_seed):
    """The generator belongs to the process that made it: an augmentor pickled to a worker
    draws there from a new one, not from a copy of the parent's state."""
    aug = imgaug.RandomCrop((4, 4))
    code = textwrap.dedent("""
        import pickle, sys
        aug = pickle.loads(sys.stdin.buffer.read())
        import numpy as np
        img = np.zeros((32, 40), np.uint8)
        print([(t.y0, t.x0) for t in (aug.get_transform(img) for _ in range(10))])
    """)
    state = aug.rng.get_state()
    outs = [subprocess.run([sys.executable, "-c", code], input=pickle.dumps(aug), capture_output=True,
                           timeout=120).stdout.decode().strip() for _ in range(2)]
    aug.rng.set_state(state)
    parent = str([(t.y0, t.x0) for t in (aug.get_transform(IMG) for _ in range(10))])
    assert outs[0] and outs[0] != outs[1] and parent not in outs


# --- errors on bad input ---------------------------------------------------------------------

@pytest.mark.parametrize("make,img,error,words", [
    (lambda: imgaug.ColorSpace(40), IMG[:, :, 0], ValueError, ["ColorSpace", "COLOR_BGR2HSV", "(32, 40)", "expected"]),
    (lambda: imgaug.Hue(), IMG[:, :, 0], ValueError, ["Hue", "(32, 40)", "HxWx3"]),
    (lambda: imgaug.Saturation(), IMG[:, :, :1], ValueError, ["Saturation", "(32, 40, 1)", "HxWx3"]),
    (lambda: imgaug.Lighting(0.1, [1, 1, 1], np.eye(3)), IMG[:, :, 0], ValueError, ["Lighting", "HxWx3"]),
    (lambda: imgaug.RandomCrop((40, 20)), IMG, ValueError, ["RandomCrop", "(40, 20)", "(32, 40, 3)"]),
    (lambda: imgaug.CenterCrop(33), IMG, ValueError, ["CenterCrop", "(33, 33)", "(32, 40, 3)"]),
    (lambda: imgaug.CenterPaste((20, 50)), IMG, ValueError, ["CenterPaste", "(20, 50)", "at least as large"]),
    (lambda: imgaug.RandomPaste((32, 50)), IMG, ValueError, ["RandomPaste", "larger than"]),
    (lambda: imgaug.JpegNoise(), IMG.astype(np.float64)[:, :, :2], ValueError, ["JpegNoise", "uint8"]),
    (lambda: imgaug.Flip(horiz=True), [[1, 2]], TypeError, ["numpy array", "list"]),
    (lambda: imgaug.RandomCropRandomShape(10, 40), IMG, ValueError,
     ["RandomCropRandomShape", "(hmin, wmin)=(40, 10)", "(32, 40)", "empty"]),
])
def test_bad_images_get_an_error_naming_what_was_wrong_and_what_was_expected(make, img, error, words):
    with pytest.raises(error) as info:
        make().augment(img)
    for w in words:
        assert w in str(info.value), (w, str(info.value))


@pytest.mark.parametrize("make,words", [
    (lambda: imgaug.Brightness(0), ["Brightness", "delta", "positive"]),
    (lambda: imgaug.Saturation(alpha=1.5), ["Saturation", "alpha", "< 1"]),
    (lambda: imgaug.SaltPepperNoise(0.6, 0.6), ["SaltPepperNoise", "<= 1"]),
    (lambda: imgaug.Grayscale(keepdims=False, keepshape=True), ["keepshape", "keepdims"]),
    (lambda: imgaug.Lighting(0.1, [1, 1], np.eye(3)), ["eigval", "(3,)", "(2,)"]),
    (lambda: imgaug.GaussianBlur(sigma_range=2), ["sigma_range", "(min, max)"]),
    (lambda: imgaug.Flip(), ["Flip", "horiz=True or vert=True"]),
    (lambda: imgaug.Resize((1, 2, 3)), ["Resize", "shape", "a positive integer or a pair of them", "(1, 2, 3)"]),
    (lambda: imgaug.AugmentorList(imgaug.Flip(horiz=True)), ["AugmentorList", "list"]),
    (lambda: AugmentImageComponent(DataFromList([[IMG]]), imgaug.Flip(horiz=True)), ["augmentors", "list"]),
    (lambda: ImageFromFile([]), ["ImageFromFile", "no image files"]),
    (lambda: ImageFromFile(["a.png"], channel=2), ["channel", "1 or 3"]),
])
def test_bad_arguments_get_an_error_naming_the_argument(make, words):
    with pytest.raises((ValueError, TypeError)) as info:
        make()
    for w in words:
        assert w in str(info.value), (w, str(info.value))


def test_coordinates_must_be_an_nx2_float_array():
    ds = AugmentImageCoordinates(DataFromList([[IMG, np.array([[1, 2]], dtype=np.int64)]]), [imgaug.Flip(horiz=True)])
    ds.reset_state()
    with pytest.raises(ValueError, match=r"Nx2 floating-point.*int64"):
        list(ds)


# --- the dataflows ---------------------------------------------------------------------------

def test_copy_keeps_the_input_and_copy_false_lets_in_place_augmentors_change_it():
    for copy in (True, False):
        dps = [[IMG.copy(), 0]]
        ds = AugmentImageComponent(DataFromList(dps, shuffle=False), [imgaug.SaltPepperNoise(0.4, 0.4)], copy=copy)
        ds.reset_state()
        (out, label), = list(ds)
        assert label == 0 and not np.array_equal(out, IMG)
        assert np.array_equal(dps[0][0], IMG) == copy


def test_catch_exceptions_drops_the_datapoint_and_logs(caplog):
    dps = [[IMG], [IMG[:4]], [IMG]]
    ds = AugmentImageComponent(DataFromList(dps, shuffle=False), [imgaug.RandomCrop(8)], catch_exceptions=True)
    ds.reset_state()
    with caplog.at_level(logging.ERROR, logger="trainstack.dataflow"):
        out = list(ds)
    assert [dp[0].shape for dp in out] == [(8, 8, 3), (8, 8, 3)]
    assert "1 augmentation errors" in caplog.text and "RandomCrop" in caplog.text


def test_augment_image_components_moves_mask_and_coordinates_with_the_image():
    mask = (IMG[:, :, 0] > 100).astype(np.uint8)
    coords = np.array([[0, 0], [39, 31], [10, 5]], dtype=np.float32)
    ds = AugmentImageComponents(DataFromList([[IMG, mask, coords]], shuffle=False),
                                [imgaug.Flip(horiz=True, prob=1.0), imgaug.CenterCrop((30, 36))], index=(0, 1),
                                coords_index=(2,))
    ds.reset_state()
    (img, m, c), = list(ds)
    np.testing.assert_array_equal(img, IMG[1:31, ::-1][:, 2:38])
    np.testing.assert_array_equal(m, mask[1:31, ::-1][:, 2:38])
    np.testing.assert_array_equal(c, [[40 - 2, -1], [1 - 2, 30], [30 - 2, 4]])


def test_image_dataflows_pickle():
    ds = AugmentImageCoordinates(DataFromList([[IMG, np.zeros((1, 2), np.float32)]], shuffle=False),
                                 [imgaug.RandomCrop(8), imgaug.Brightness(3)], catch_exceptions=True)
    clone = pickle.loads(pickle.dumps(ds))
    clone.reset_state()
    (img, coords), = list(clone)
    assert img.shape == (8, 8, 3) and coords.shape == (1, 2)


def test_image_from_file_reads_rgb_grey_and_resizes(tmp_path):
    cv2 = pytest.importorskip("cv2", reason="ImageFromFile reads with OpenCV (the imgaug extra)")
    files = []
    for k in range(3):
        f = str(tmp_path / f"{k}.png")
        cv2.imwrite(f, np.roll(IMG, k, axis=0))  # written as BGR
        files.append(f)
    rgb = [dp[0] for dp in ImageFromFile(files)]
    for k, img in enumerate(rgb):
        np.testing.assert_array_equal(img, np.roll(IMG, k, axis=0)[:, :, ::-1])
    grey = [dp[0] for dp in ImageFromFile(files, channel=1, resize=(16, 20))]
    assert grey[0].shape == (16, 20, 1) and grey[0].dtype == np.uint8
    shuffled = ImageFromFile(list(files), shuffle=True)
    shuffled.reset_state()
    assert len(shuffled) == 3 and sorted(int(dp[0].sum()) for dp in shuffled) == sorted(int(i.sum()) for i in rgb)
    missing = ImageFromFile([str(tmp_path / "missing.png")])
    with pytest.raises(OSError, match="missing.png"):
        list(missing)


def test_random_cutout_draws_its_size_from_low_high_ranges():
    """tensorpack 0.11 fails on ranges (it draws ``randint((low, high))``, an array); trainstack
    draws ``randint(low, high)`` as documented."""
    aug = imgaug.RandomCutout((2, 6), (3, 8), fill=1)
    sizes = set()
    for _ in range(40):
        filled = aug.augment(np.zeros((H, W), np.uint8))
        ys, xs = np.nonzero(filled)
        h, w = ys.max() - ys.min() + 1, xs.max() - xs.min() + 1
        assert filled.sum() == h * w  # one filled rectangle
        sizes.add((h, w))
    assert {h for h, _ in sizes} <= set(range(2, 6)) and {w for _, w in sizes} <= set(range(3, 8))
    assert len(sizes) > 4
