"""The differential suite, image augmentors: ``tensorpack.dataflow.imgaug`` (0.11) against
``trainstack.dataflow.imgaug``.

Every augmentor is built in both libraries with the same arguments and seeded the same way
(both libraries' ``fix_rng_seed`` around ``reset_state``, which also reseeds the members of a
composite augmentor, so seeding happens after building); then several images in a row must give
the same transforms: the same pixels (dtype, shape and values, exactly) and the same
coordinates from ``apply_coords`` (or both raise ``NotImplementedError``, where tensorpack's
transform moves images only). The dataflows ``AugmentImageComponent(s)`` and
``AugmentImageCoordinates`` and augmentors written against tensorpack's older API are compared
the same way. Every comparison is exact: both libraries run the same NumPy and OpenCV calls on
the same values, so no tolerance is needed.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from tensorpack.dataflow import imgaug as tp_imgaug

from trainstack.dataflow import imgaug as ts_imgaug

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)
from pipelines import observe, outcome, seeded, tp, ts  # noqa: E402

IMGAUG = {"tensorpack": tp_imgaug, "trainstack": ts_imgaug}
DATAFLOW = {"tensorpack": tp, "trainstack": ts}

H, W = 32, 40
INTER_CUBIC, INTER_NEAREST, BORDER_CONSTANT = 2, 0, 0
COLOR_BGR2HSV, COLOR_RGB2GRAY, COLOR_BGR2YCrCb = 40, 7, 36
EIGVAL = [0.2175, 0.0188, 0.0045]
EIGVEC = [[-0.5675, 0.7192, 0.4009], [-0.5808, -0.0045, -0.8140], [-0.5836, -0.6948, 0.4203]]


def _images() -> dict[str, np.ndarray]:
    rng = np.random.RandomState(42)
    u8 = rng.randint(0, 256, size=(H, W, 3)).astype(np.uint8)
    return {"u8": u8, "f32": (u8.astype(np.float32) + rng.uniform(0, 1, size=u8.shape).astype(np.float32)) * 0.99,
            "gray": u8[:, :, 0].copy(), "gray1": u8[:, :, :1].copy()}


IMAGES = _images()
# the corners of a box and a few keypoints, (x, y) rows
COORDS = np.array([[0, 0], [W, 0], [0, H], [W, H], [10.5, 7.25], [31, 20], [3, 29.5]], dtype=np.float32)


def add_one(img: np.ndarray) -> np.ndarray:
    return img + 1


def mirror_coords(coords: np.ndarray) -> np.ndarray:
    coords[:, 0] = W - coords[:, 0]
    return coords


# name -> (build(imgaug module), image kinds); every augmentor of both libraries' lists is here
CASES = {
    # resize, flip
    "Resize": (lambda ia: ia.Resize((20, 30)), "u8 f32 gray gray1"),
    "Resize-int-cubic": (lambda ia: ia.Resize(24, interp=INTER_CUBIC), "u8 f32"),
    "ResizeShortestEdge": (lambda ia: ia.ResizeShortestEdge(24), "u8 f32 gray gray1"),
    "ResizeShortestEdge-nearest": (lambda ia: ia.ResizeShortestEdge(50, interp=INTER_NEAREST), "u8"),
    "RandomResize-scale": (lambda ia: ia.RandomResize((0.7, 1.3), (0.7, 1.3)), "u8 f32 gray1"),
    "RandomResize-pixels": (lambda ia: ia.RandomResize((30, 50), (25, 40), minimum=(32, 0)), "u8"),
    "RandomResize-keep-aspect": (lambda ia: ia.RandomResize((0.5, 1.5), aspect_ratio_thres=0), "u8"),
    "Flip-horiz": (lambda ia: ia.Flip(horiz=True), "u8 f32 gray gray1"),
    "Flip-vert": (lambda ia: ia.Flip(vert=True, prob=0.7), "u8 gray"),
    "Transpose": (lambda ia: ia.Transpose(), "u8 f32 gray gray1"),
    # crop, paste
    "RandomCrop": (lambda ia: ia.RandomCrop((20, 24)), "u8 f32 gray gray1"),
    "RandomCrop-int": (lambda ia: ia.RandomCrop(16), "u8"),
    "CenterCrop": (lambda ia: ia.CenterCrop((21, 25)), "u8 gray"),
    "RandomCropRandomShape": (lambda ia: ia.RandomCropRandomShape(10, 12), "u8 f32"),
    "RandomCropRandomShape-max": (lambda ia: ia.RandomCropRandomShape(10, 12, wmax=30, hmax=20), "u8"),
    "GoogleNetRandomCropAndResize": (lambda ia: ia.GoogleNetRandomCropAndResize(target_shape=16), "u8 f32 gray1"),
    "GoogleNetRandomCropAndResize-fallback": (
        lambda ia: ia.GoogleNetRandomCropAndResize((0.95, 1.0), (3.0, 4.0), target_shape=16, interp=INTER_CUBIC),
        "u8"),
    "RandomCutout": (lambda ia: ia.RandomCutout(8, 6, fill=17.0), "u8 f32 gray"),
    "CenterPaste": (lambda ia: ia.CenterPaste((48, 50)), "u8 f32 gray"),
    "CenterPaste-filler": (lambda ia: ia.CenterPaste((40, 45), ia.ConstantBackgroundFiller(7)), "u8 gray1"),
    "RandomPaste": (lambda ia: ia.RandomPaste((40, 50)), "u8 gray"),
    # warps
    "Shift": (lambda ia: ia.Shift(0.2, 0.1), "u8 f32 gray"),
    "Shift-constant": (lambda ia: ia.Shift(0.3, 0.3, border=BORDER_CONSTANT, border_value=9), "u8"),
    "Rotation": (lambda ia: ia.Rotation(30), "u8 f32 gray gray1"),
    "Rotation-step": (lambda ia: ia.Rotation(180, center_range=(0.4, 0.6), step_deg=90), "u8"),
    "Rotation-constant": (lambda ia: ia.Rotation(20, interp=INTER_CUBIC, border=BORDER_CONSTANT, border_value=5),
                          "u8 f32"),
    "RotationAndCropValid": (lambda ia: ia.RotationAndCropValid(25), "u8 f32 gray"),
    "RotationAndCropValid-step": (lambda ia: ia.RotationAndCropValid(180, step_deg=45), "u8"),
    "Affine": (lambda ia: ia.Affine(scale=(0.8, 1.2), translate_frac=(0.1, 0.2), rotate_max_deg=20, shear=10),
               "u8 f32 gray gray1"),
    "Affine-default": (lambda ia: ia.Affine(), "u8"),
    "Affine-rotate-constant": (lambda ia: ia.Affine(rotate_max_deg=45, border=BORDER_CONSTANT, border_value=3),
                               "u8"),
    # photometric
    "Brightness": (lambda ia: ia.Brightness(40), "u8 f32 gray gray1"),
    "Brightness-noclip": (lambda ia: ia.Brightness(40, clip=False), "u8 f32"),
    "BrightnessScale": (lambda ia: ia.BrightnessScale((0.6, 1.4)), "u8 f32 gray"),
    "BrightnessScale-noclip": (lambda ia: ia.BrightnessScale((0.6, 1.4), clip=False), "f32"),
    "Contrast": (lambda ia: ia.Contrast((0.5, 1.5)), "u8 f32 gray gray1"),
    "Contrast-rgb": (lambda ia: ia.Contrast((0.5, 1.5), rgb=True), "u8 f32"),
    "Contrast-bgr-noclip": (lambda ia: ia.Contrast((0.2, 1.8), rgb=False, clip=False), "u8 f32"),
    "Saturation": (lambda ia: ia.Saturation(), "u8 f32"),
    "Saturation-bgr-noclip": (lambda ia: ia.Saturation(0.9, rgb=False, clip=False), "u8 f32"),
    "Hue": (lambda ia: ia.Hue(), "u8 f32"),
    "Hue-bgr": (lambda ia: ia.Hue((-20, 20), rgb=False), "u8 f32"),
    "Lighting": (lambda ia: ia.Lighting(30, EIGVAL, EIGVEC), "u8 f32"),
    "Lighting-noclip": (lambda ia: ia.Lighting(80, EIGVAL, EIGVEC, clip=False), "f32"),
    "Gamma": (lambda ia: ia.Gamma(), "u8 f32 gray gray1"),
    "GaussianBlur": (lambda ia: ia.GaussianBlur(), "u8 f32 gray gray1"),
    "GaussianBlur-sigma-asym": (lambda ia: ia.GaussianBlur((1, 4), (0.5, 2.0), symmetric=False), "u8 f32"),
    "GaussianBlur-int": (lambda ia: ia.GaussianBlur(4), "u8"),
    "Clip": (lambda ia: ia.Clip(30, 200), "u8 f32 gray"),
    "MeanVarianceNormalize": (lambda ia: ia.MeanVarianceNormalize(), "u8 f32 gray"),
    "MeanVarianceNormalize-channels": (lambda ia: ia.MeanVarianceNormalize(all_channel=False), "u8 f32"),
    "MinMaxNormalize": (lambda ia: ia.MinMaxNormalize(), "u8 f32"),
    "MinMaxNormalize-channels": (lambda ia: ia.MinMaxNormalize(-1, 1, all_channel=False), "u8"),
    # noise
    "GaussianNoise": (lambda ia: ia.GaussianNoise(), "u8 f32 gray"),
    "GaussianNoise-noclip": (lambda ia: ia.GaussianNoise(20, clip=False), "u8 f32"),
    "SaltPepperNoise": (lambda ia: ia.SaltPepperNoise(), "u8 f32 gray gray1"),
    "SaltPepperNoise-probs": (lambda ia: ia.SaltPepperNoise(0.2, 0.3), "u8"),
    "JpegNoise": (lambda ia: ia.JpegNoise(), "u8 gray"),
    "JpegNoise-low": (lambda ia: ia.JpegNoise((5, 30)), "u8"),
    # conversions
    "ColorSpace": (lambda ia: ia.ColorSpace(COLOR_BGR2HSV), "u8 f32"),
    "ColorSpace-ycrcb": (lambda ia: ia.ColorSpace(COLOR_BGR2YCrCb), "u8"),
    "ColorSpace-gray": (lambda ia: ia.ColorSpace(COLOR_RGB2GRAY), "u8 f32"),
    "ColorSpace-gray-nokeepdims": (lambda ia: ia.ColorSpace(COLOR_RGB2GRAY, keepdims=False), "u8"),
    "Grayscale": (lambda ia: ia.Grayscale(), "u8 f32"),
    "Grayscale-rgb-2d": (lambda ia: ia.Grayscale(keepdims=False, rgb=True), "u8"),
    "Grayscale-keepshape": (lambda ia: ia.Grayscale(keepshape=True), "u8 f32"),
    "ToUint8": (lambda ia: ia.ToUint8(), "u8 f32 gray"),
    "ToFloat32": (lambda ia: ia.ToFloat32(), "u8 f32 gray"),
    # functions, composition
    "Identity": (lambda ia: ia.Identity(), "u8 gray"),
    "MapImage": (lambda ia: ia.MapImage(add_one), "u8 f32"),
    "MapImage-coords": (lambda ia: ia.MapImage(lambda img: img[:, ::-1], mirror_coords), "u8"),
    "AugmentorList": (lambda ia: ia.AugmentorList([
        ia.RandomCrop((28, 34)), ia.Flip(horiz=True), ia.Brightness(20), ia.Rotation(15),
        ia.ResizeShortestEdge(20), ia.GaussianNoise(3)]), "u8 f32"),
    "AugmentorList-nested": (lambda ia: ia.AugmentorList([
        ia.AugmentorList([ia.Flip(vert=True), ia.Shift(0.1, 0.1)]), ia.CenterCrop(24), ia.ToFloat32(),
        ia.Contrast((0.8, 1.2), rgb=True)]), "u8"),
    "RandomApplyAug": (lambda ia: ia.RandomApplyAug(ia.Rotation(20), 0.5), "u8 f32"),
    "RandomApplyAug-list": (lambda ia: ia.RandomApplyAug(ia.AugmentorList([ia.RandomCrop(24), ia.Hue()]), 0.7),
                            "u8"),
    "RandomChooseAug": (lambda ia: ia.RandomChooseAug([ia.Flip(horiz=True), ia.Brightness(10), ia.Affine(
        scale=(0.9, 1.1))]), "u8 f32"),
    "RandomChooseAug-probs": (lambda ia: ia.RandomChooseAug([(ia.Flip(vert=True, prob=1.0), 0.3),
                                                             (ia.Contrast((0.5, 1.5)), 0.7)]), "u8"),
    "RandomOrderAug": (lambda ia: ia.RandomOrderAug([ia.Brightness(10), ia.Contrast((0.8, 1.2)),
                                                     ia.Saturation(0.3), ia.Flip(horiz=True)]), "u8 f32"),
}
PARAMS = [pytest.param(name, kind, id=f"{name}-{kind}") for name, (_, kinds) in CASES.items() for kind in kinds.split()]
N_IMAGES = 4  # images in a row through one augmentor: the RNG stream, not only its first draw


def assert_same_array(got, expected):
    """The same type, dtype, shape and values (NaN where NaN)."""
    assert type(got) is type(expected)
    assert got.dtype == expected.dtype and got.shape == expected.shape, (got.dtype, got.shape, expected.dtype,
                                                                           expected.shape)
    np.testing.assert_array_equal(got, expected)


def seeded_reset(aug, seed):
    """Seed ``aug`` and, for a composite, its members, the same way in both libraries."""
    with seeded(seed):
        aug.reset_state()
    return aug


def run_augmentor(aug, img, coords, n=N_IMAGES):
    """For ``n`` images in a row: (the augmented image, what ``apply_coords`` gave or raised)."""
    out = []
    for _ in range(n):
        tfm = aug.get_transform(img)
        image = tfm.apply_image(img.copy())
        out.append((image, outcome(lambda tfm=tfm: tfm.apply_coords(coords.copy()))))
    return out


def assert_same_runs(runs):
    for (tp_img, (tp_kind, tp_coords)), (ts_img, (ts_kind, ts_coords)) in zip(runs["tensorpack"],
                                                                                runs["trainstack"], strict=True):
        assert_same_array(ts_img, tp_img)
        assert ts_kind == tp_kind, (tp_coords, ts_coords)
        if tp_kind == "ok":
            assert_same_array(ts_coords, tp_coords)
        else:  # tensorpack's transform moves images only: trainstack's says so the same way
            assert isinstance(tp_coords, NotImplementedError) and isinstance(ts_coords, NotImplementedError)


@pytest.mark.parametrize("seed", [3, 2024])
@pytest.mark.parametrize("name,kind", PARAMS)
def test_augmentor_gives_the_same_pixels_and_coordinates(name, kind, seed):
    build = CASES[name][0]
    runs = {lib: run_augmentor(seeded_reset(build(ia), seed), IMAGES[kind], COORDS) for lib, ia in IMGAUG.items()}
    assert_same_runs(runs)


def test_every_augmentor_of_both_lists_is_compared():
    compared = {name.split("-")[0] for name in CASES}
    issue_list = {"Resize", "ResizeShortestEdge", "RandomResize", "RandomCrop", "CenterCrop", "RandomCropRandomShape",
                  "CenterPaste", "Flip", "Rotation", "Affine", "Shift", "RotationAndCropValid", "Brightness",
                  "BrightnessScale", "Contrast", "Saturation", "Hue", "Lighting", "GaussianNoise", "GaussianBlur",
                  "Clip", "ToUint8", "ToFloat32", "MeanVarianceNormalize", "Grayscale", "ColorSpace",
                  "GoogleNetRandomCropAndResize", "SaltPepperNoise", "AugmentorList", "RandomApplyAug",
                  "RandomChooseAug", "RandomOrderAug", "MapImage"}
    assert issue_list <= compared, issue_list - compared
    # and every augmentor trainstack exports (the base classes aside)
    exported = {n for n in ts_imgaug.__all__ if isinstance(getattr(ts_imgaug, n), type)
                and issubclass(getattr(ts_imgaug, n), ts_imgaug.ImageAugmentor)}
    bases = {"ImageAugmentor", "Augmentor", "PhotometricAugmentor", "TransformAugmentorBase"}
    assert exported - bases <= compared, (exported - bases) - compared


def test_every_tensorpack_augmentor_exists_in_trainstack():
    """tensorpack 0.11's names; Albumentations and IAAugmentor wrap other libraries, not ported."""
    missing = {n for n in tp_imgaug.__all__ if not hasattr(ts_imgaug, n)}
    assert missing == {"Albumentations", "IAAugmentor"}


@pytest.mark.parametrize("kind", ["u8", "f32"])
def test_augment_gives_the_same_image(kind):
    """``augment(img)``, the one-image shortcut."""
    build = CASES["AugmentorList"][0]
    got = {lib: seeded_reset(build(ia), 5).augment(IMAGES[kind].copy()) for lib, ia in IMGAUG.items()}
    assert_same_array(got["trainstack"], got["tensorpack"])


def test_both_imgaug_packages_import_without_tensorflow():
    """The oracle is TF-free: with TensorFlow made unimportable, both augmentor packages import
    and run (tensorpack's package __init__ imports TensorFlow only when it is installed)."""
    code = textwrap.dedent("""
        import sys
        sys.modules["tensorflow"] = None  # import tensorflow now raises ImportError
        import numpy as np
        from tensorpack.dataflow import imgaug as tp_imgaug
        from trainstack.dataflow import imgaug as ts_imgaug
        img = np.zeros((8, 8, 3), np.uint8)
        for ia in (tp_imgaug, ts_imgaug):
            assert ia.Resize((4, 4)).augment(img).shape == (4, 4, 3)
        assert not [m for m in sys.modules if m.startswith("tensorflow.")]
        print("ok")
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("ok")


def test_without_a_fixed_seed_two_augmentors_draw_differently_in_both():
    for ia in IMGAUG.values():
        a, b = ia.RandomCrop(8), ia.RandomCrop(8)
        a.reset_state(), b.reset_state()
        offsets = [[(t.y0, t.x0) for t in (aug.get_transform(IMAGES["u8"]) for _ in range(6))] for aug in (a, b)]
        assert offsets[0] != offsets[1]


@pytest.fixture(autouse=True)
def tensorpack_affine_under_opencv5(monkeypatch):
    """tensorpack 0.11's Affine gives OpenCV its random angle and scale as 0-d float32 arrays,
    which OpenCV 5 refuses ("can not be safely parsed to 'double'"). Where it does, tensorpack's
    geometry module gets a cv2 whose getRotationMatrix2D converts them with ``float()`` first,
    which is exact, so the oracle computes what it computed under OpenCV 4. A shim for the
    oracle only: trainstack's Affine converts them itself."""
    import cv2
    import tensorpack.dataflow.imgaug.geometry as tp_geometry

    try:
        cv2.getRotationMatrix2D((1.0, 1.0), np.array(1.0, dtype=np.float32), np.array(1.0, dtype=np.float32))
    except TypeError:
        class FloatArgsCV2:
            def __getattr__(self, name):
                return getattr(cv2, name)

            @staticmethod
            def getRotationMatrix2D(center, angle, scale):  # noqa: N802 - OpenCV's name
                return cv2.getRotationMatrix2D(center, float(angle), float(scale))

        monkeypatch.setattr(tp_geometry, "cv2", FloatArgsCV2())


# --- the dataflows that run augmentors ------------------------------------------------------------

@pytest.fixture
def np_float_alias(monkeypatch):
    """tensorpack 0.11's validate_coords asks ``np.issubdtype(coords.dtype, np.float)``, which
    NumPy of its time read as "any floating dtype"; NumPy 1.24 removed ``np.float``. Put it back
    as ``np.floating`` while the test runs, which is what that check meant (a shim for the
    oracle only: trainstack's check needs none)."""
    monkeypatch.setattr(np, "float", np.floating, raising=False)


def image_datapoints(n=6):
    rng = np.random.RandomState(7)
    out = []
    for k in range(n):
        img = rng.randint(0, 256, size=(H, W, 3)).astype(np.uint8)
        mask = (img[:, :, 0] > 128).astype(np.uint8)
        coords = (rng.uniform(0, 1, size=(5, 2)) * [W, H]).astype(np.float32)
        out.append([img, k, mask, coords])
    return out


def pipeline_augs(ia):
    return [ia.RandomCrop((28, 36)), ia.Flip(horiz=True), ia.Rotation(10), ia.Brightness(15)]


def run_dataflow(build, seed, passes=2):
    """``passes`` passes of ``build(lib, imgaug)`` in each library after a seeded reset_state,
    observed; the datapoints given to the dataflow are checked to be unchanged (copy=True)."""
    got = {}
    for lib in ("tensorpack", "trainstack"):
        dps = image_datapoints()
        ds = build(DATAFLOW[lib], IMGAUG[lib], dps)
        before = observe(dps)
        with seeded(seed):
            ds.reset_state()
        got[lib] = [[observe(dp) for dp in ds] for _ in range(passes)]
        assert observe(dps) == before, f"{lib} changed its input"
    assert got["trainstack"] == got["tensorpack"]
    return got["tensorpack"]


@pytest.mark.parametrize("as_list", [False, True])
def test_augment_image_component(as_list):
    def build(df, ia, dps):
        augs = pipeline_augs(ia) if as_list else ia.AugmentorList(pipeline_augs(ia))
        return df.AugmentImageComponent(df.DataFromList(dps, shuffle=False), augs, index=0)

    out = run_dataflow(build, 11)
    assert len(out[0]) == 6 and out[0] != out[1]  # a new draw every pass


def test_augment_image_component_of_dict_datapoints():
    def build(df, ia, dps):
        dicts = [{"image": dp[0], "label": dp[1]} for dp in dps]
        return df.AugmentImageComponent(df.DataFromList(dicts, shuffle=False), pipeline_augs(ia), index="image")

    run_dataflow(build, 12)


def test_augment_image_components_with_masks_and_coordinates(np_float_alias):
    def build(df, ia, dps):
        return df.AugmentImageComponents(df.DataFromList(dps, shuffle=False), pipeline_augs(ia), index=(0, 2),
                                         coords_index=(3,))

    out = run_dataflow(build, 13)
    assert len(out[0]) == 6


def test_augment_image_coordinates(np_float_alias):
    def build(df, ia, dps):
        pairs = [[dp[0], dp[3]] for dp in dps]
        return df.AugmentImageCoordinates(df.DataFromList(pairs, shuffle=False), pipeline_augs(ia), 0, 1)

    run_dataflow(build, 14)


@pytest.mark.parametrize("name", ["AugmentImageComponent", "AugmentImageComponents", "AugmentImageCoordinates"])
def test_catch_exceptions_drops_the_same_datapoints(name, np_float_alias):
    """Some images are too small for the crop: with catch_exceptions both drop them, without it
    both raise (tensorpack an AssertionError, trainstack a ValueError saying what was wrong)."""
    def build(catch):
        def make(df, ia, dps):
            for k in (1, 4):
                dps[k][0] = dps[k][0][:20]  # 20 rows: smaller than the 28-row crop
            if name == "AugmentImageComponent":
                return df.AugmentImageComponent(df.DataFromList(dps, shuffle=False), pipeline_augs(ia),
                                                catch_exceptions=catch)
            if name == "AugmentImageComponents":
                return df.AugmentImageComponents(df.DataFromList(dps, shuffle=False), pipeline_augs(ia),
                                                 index=(0, 2), catch_exceptions=catch)
            pairs = [[dp[0], dp[3]] for dp in dps]
            return df.AugmentImageCoordinates(df.DataFromList(pairs, shuffle=False), pipeline_augs(ia),
                                              catch_exceptions=catch)
        return make

    out = run_dataflow(build(True), 15)
    assert len(out[0]) == 4
    for lib in ("tensorpack", "trainstack"):
        ds = build(False)(DATAFLOW[lib], IMGAUG[lib], image_datapoints())
        ds.reset_state()
        kind, err = outcome(lambda ds=ds: list(ds))
        assert kind == "raises" and isinstance(err, AssertionError if lib == "tensorpack" else ValueError)
        if lib == "trainstack":
            assert "RandomCrop" in str(err) and "(28, 36)" in str(err)


def test_copy_false_changes_the_input_in_both():
    """``copy=False``: an in-place augmentor (SaltPepperNoise) changes the dataflow's arrays, in both."""
    changed = {}
    for lib in ("tensorpack", "trainstack"):
        dps = image_datapoints(2)
        before = [dp[0].copy() for dp in dps]
        ds = DATAFLOW[lib].AugmentImageComponent(DATAFLOW[lib].DataFromList(dps, shuffle=False),
                                                 [IMGAUG[lib].SaltPepperNoise(0.3, 0.3)], copy=False)
        with seeded(16):
            ds.reset_state()
        out = [dp[0] for dp in ds]
        changed[lib] = [observe(dp[0]) for dp in dps]
        assert all(o is dp[0] for o, dp in zip(out, dps)) and not np.array_equal(before[0], dps[0][0])
    assert changed["trainstack"] == changed["tensorpack"]


# --- augmentors written against tensorpack's older API -----------------------------------------

def legacy_augmentors(ia):
    """User-written augmentors of each style, subclassing the library's ``ImageAugmentor``."""

    class OldShift(ia.ImageAugmentor):
        """Old style with coordinates: _init(locals()), _rand_range, _get_augment_params,
        _augment, _augment_coords."""

        def __init__(self, max_dx=5, max_dy=3):
            super().__init__()
            self._init(locals())

        def _get_augment_params(self, img):
            return int(self._rand_range(-self.max_dx, self.max_dx)), int(self._rand_range(-self.max_dy, self.max_dy))

        def _augment(self, img, param):
            dx, dy = param
            return np.roll(np.roll(img, dx, axis=1), dy, axis=0)

        def _augment_coords(self, coords, param):
            coords[:, 0] += param[0]
            coords[:, 1] += param[1]
            return coords

    class OldNoise(ia.ImageAugmentor):
        """Old photometric style: no _augment_coords (coordinates stay)."""

        def __init__(self, scale=8.0):
            super().__init__()
            self._init(locals())

        def _get_augment_params(self, img):
            return self.rng.uniform(-self.scale, self.scale, size=img.shape[:2])

        def _augment(self, img, noise):
            out = img.astype("float32") + noise.astype("float32")[..., None]
            return np.clip(out, 0, 255).astype(img.dtype)

    class OldCropAsTransform(ia.ImageAugmentor):
        """Old style whose _get_augment_params returns a Transform already."""

        def _get_augment_params(self, img):
            y0 = self.rng.randint(0, 5)
            x0 = self.rng.randint(0, 5)
            return ia.CropTransform(y0, x0, img.shape[0] - 5, img.shape[1] - 5)

    class NewStyle(ia.ImageAugmentor):
        """The current style, for comparison: get_transform."""

        def get_transform(self, img):
            return ia.FlipTransform(img.shape[0], img.shape[1], horiz=bool(self.rng.rand() < 0.5))

    return {"OldShift": OldShift, "OldNoise": OldNoise, "OldCropAsTransform": OldCropAsTransform,
            "NewStyle": NewStyle}


LEGACY_CASES = {
    "OldShift": lambda ia, c: c["OldShift"](),
    "OldNoise": lambda ia, c: c["OldNoise"](),
    "OldCropAsTransform": lambda ia, c: c["OldCropAsTransform"](),
    "mixed": lambda ia, c: ia.AugmentorList([c["OldShift"](4, 4), ia.Flip(horiz=True), c["OldNoise"](3.0),
                                             ia.RandomCrop((26, 30)), c["NewStyle"](), c["OldCropAsTransform"](),
                                             ia.Brightness(10)]),
    "in-meta": lambda ia, c: ia.RandomChooseAug([c["OldShift"](), ia.RandomApplyAug(c["OldNoise"](), 0.5)]),
}


@pytest.mark.parametrize("kind", ["u8", "f32"])
@pytest.mark.parametrize("name", sorted(LEGACY_CASES))
def test_old_api_augmentors_give_the_same_pixels_and_coordinates(name, kind):
    runs = {}
    for lib, ia in IMGAUG.items():
        aug = seeded_reset(LEGACY_CASES[name](ia, legacy_augmentors(ia)), 21)
        runs[lib] = run_augmentor(aug, IMAGES[kind], COORDS, n=5)
    assert_same_runs(runs)


@pytest.mark.parametrize("name", ["OldShift", "OldNoise", "mixed"])
def test_old_api_calls_augment_return_params_with_params_and_coords(name):
    """The callers' side of the old API: augment_return_params, augment_with_params (a second
    image, e.g. a mask, changed the same way) and augment_coords."""
    got = {}
    for lib, ia in IMGAUG.items():
        aug = seeded_reset(LEGACY_CASES[name](ia, legacy_augmentors(ia)), 22)
        out = []
        for _ in range(3):
            img, params = aug.augment_return_params(IMAGES["u8"].copy())
            mask = aug.augment_with_params(IMAGES["gray1"].copy(), params)
            coords = aug.augment_coords(COORDS.copy(), params)
            out.append((img, mask, coords))
        got[lib] = out
    for tp_out, ts_out in zip(got["tensorpack"], got["trainstack"], strict=True):
        for tp_arr, ts_arr in zip(tp_out, ts_out, strict=True):
            assert_same_array(ts_arr, tp_arr)


def test_old_api_augmentor_in_an_augment_image_coordinates_dataflow(np_float_alias):
    def build(df, ia, dps):
        c = legacy_augmentors(ia)
        pairs = [[dp[0], dp[3]] for dp in dps]
        return df.AugmentImageCoordinates(df.DataFromList(pairs, shuffle=False),
                                          [c["OldShift"](), ia.Flip(horiz=True), c["OldNoise"]()])

    run_dataflow(build, 23)
