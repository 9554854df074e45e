"""The differential suite, image grids and boxes: ``tensorpack.utils.viz`` (0.11) against
``trainstack.dataflow.viz``.

``stack_patches``, ``gen_stack_patches``, ``draw_boxes`` and ``draw_text`` run in both libraries
on the same inputs and must give the same arrays (dtype, shape and every pixel, exactly), or
both refuse the input. tensorpack's viz imports without TensorFlow (checked below in a fresh
process); ``pipelines`` keeps TensorFlow out of this process as the parity session does.
"""
from __future__ import annotations

import os
import subprocess
import sys
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)
from pipelines import observe, outcome  # noqa: E402  (imported first: it blocks TensorFlow)

pytest.importorskip("cv2")
import tensorpack.utils.viz as tp_viz  # noqa: E402

from trainstack.dataflow import viz as ts_viz  # noqa: E402

VIZ = {"tensorpack": tp_viz, "trainstack": ts_viz}


@pytest.fixture(autouse=True)
def np_object_alias(monkeypatch: pytest.MonkeyPatch) -> None:
    """tensorpack 0.11's ``_preprocess_patch_list`` asserts ``dtype != np.object``; NumPy 1.24
    removed that alias of the builtin ``object``. Put it back while a test runs, which is what
    the check meant (a shim for the oracle only: trainstack's viz does not use it)."""
    if "object" not in vars(np):   # not hasattr: NumPy 2 warns on asking for the alias
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            monkeypatch.setattr(np, "object", object, raising=False)


def both(call: Callable[[Any], Any]) -> dict[str, tuple[str, Any]]:
    """``call(viz module)`` in each library: ``("ok", observed value)`` or ``("raises", type)``."""
    got = {}
    for name, lib in VIZ.items():
        kind, value = outcome(lambda lib=lib: call(lib))
        got[name] = (kind, observe(value) if kind == "ok" else type(value).__name__)
    return got


def assert_same(call: Callable[[Any], Any], what: str) -> Any:
    """Both libraries return the same array for ``call``; returns it (observed)."""
    got = both(call)
    tp_kind, tp_value = got["tensorpack"]
    ts_kind, ts_value = got["trainstack"]
    assert tp_kind == "ok", f"{what}: tensorpack raised {tp_value} (the case is meant to work in it)"
    assert ts_kind == "ok", f"{what}: trainstack raised {ts_value}, tensorpack returned an array"
    if ts_value != tp_value:
        _, tp_dtype, tp_shape, tp_pixels = tp_value
        _, ts_dtype, ts_shape, ts_pixels = ts_value
        detail = f"dtype/shape {ts_dtype} {ts_shape}, expected tensorpack's {tp_dtype} {tp_shape}"
        if (tp_dtype, tp_shape) == (ts_dtype, ts_shape):
            diff = np.argwhere(np.asarray(tp_pixels) != np.asarray(ts_pixels))
            detail = f"{len(diff)} pixels differ, first at {tuple(int(i) for i in diff[0])}"
        raise AssertionError(f"{what}: trainstack's result differs from tensorpack's: {detail}")
    return ts_value


def patches(n: int, h: int, w: int, c: int | None = None, seed: int = 0, dtype: str = "uint8") -> np.ndarray:
    rng = np.random.RandomState(seed)
    shape = (n, h, w) if c is None else (n, h, w, c)
    if dtype == "uint8":
        return rng.randint(0, 256, size=shape).astype(np.uint8)
    return rng.uniform(0, 255.9, size=shape).astype(dtype)


# --- import --------------------------------------------------------------------------------------

def test_tensorpack_viz_imports_without_tensorflow() -> None:
    """In the parity session there is no TensorFlow at all; here it is made unimportable."""
    code = ("import sys; sys.modules['tensorflow'] = None; import tensorpack.utils.viz as v; "
            "print(sorted(n for n in ('stack_patches', 'gen_stack_patches', 'draw_boxes') if hasattr(v, n)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, f"tensorpack.utils.viz does not import without TensorFlow:\n{out.stderr[-2000:]}"
    assert out.stdout.strip().splitlines()[-1] == "['draw_boxes', 'gen_stack_patches', 'stack_patches']"


# --- stack_patches ---------------------------------------------------------------------------------

GRAY = patches(5, 12, 9)                       # NHW
COLOR = patches(7, 10, 14, c=3, seed=1)        # NHWC
GRAY1 = patches(4, 21, 20, c=1, seed=2)        # NHW1
FLOAT = patches(6, 8, 8, c=3, seed=3, dtype="float32")
WIDE = patches(3, 40, 60, c=3, seed=4)         # default border int(0.05 * 40) = 2

STACK_CASES: dict[str, tuple[Any, dict[str, Any]]] = {
    "gray, default border and background, 5 in 2x3": (GRAY, dict(nr_row=2, nr_col=3)),
    "gray, exactly full": (GRAY[:4], dict(nr_row=2, nr_col=2, border=1)),
    "gray, one patch in 3x3": (GRAY[:1], dict(nr_row=3, nr_col=3, border=3, bgcolor=7)),
    "gray, color background": (GRAY, dict(nr_row=3, nr_col=2, border=2, bgcolor=(10, 200, 30))),
    "color, border 0": (COLOR, dict(nr_row=3, nr_col=3, border=0)),
    "color, int background": (COLOR, dict(nr_row=2, nr_col=4, border=4, bgcolor=0)),
    "color, BGR background, a column": (COLOR[:3], dict(nr_row=4, nr_col=1, border=2, bgcolor=(255, 0, 128))),
    "HW1, default border": (GRAY1, dict(nr_row=2, nr_col=3)),
    "HW1, BGR background": (GRAY1, dict(nr_row=1, nr_col=5, bgcolor=(1, 2, 3))),
    "float32 values cast to uint8": (FLOAT, dict(nr_row=2, nr_col=3, border=1)),
    "non-square, default border 2": (WIDE, dict(nr_row=2, nr_col=2)),
    "list of arrays": (list(COLOR[:5]), dict(nr_row=2, nr_col=3, border=1, viz=False)),
    "pad, shapes differ, int background": (
        [COLOR[0], GRAY[1], GRAY1[2], WIDE[0][:7, :30]], dict(nr_row=2, nr_col=3, pad=True, border=2, bgcolor=40)),
    "pad, shapes differ, BGR background": (
        [GRAY[0], WIDE[1][:13, :11], COLOR[2]], dict(nr_row=1, nr_col=3, pad=True, bgcolor=(9, 99, 199))),
    "pad, one shape": (list(GRAY[:3]), dict(nr_row=2, nr_col=2, pad=True, border=1)),
}


@pytest.mark.parametrize("case", list(STACK_CASES))
def test_stack_patches_same_grid(case: str) -> None:
    plist, kwargs = STACK_CASES[case]
    _, dtype, shape, _ = assert_same(lambda v: v.stack_patches(plist, **kwargs), f"stack_patches({case})")
    assert dtype == "|u1" and len(shape) == 3


def test_stack_patches_leaves_its_input_alone() -> None:
    plist = COLOR.copy()
    for lib in VIZ.values():
        lib.stack_patches(plist, 2, 4, pad=True, bgcolor=(1, 2, 3))
        np.testing.assert_array_equal(plist, COLOR, err_msg=f"{lib.__name__}.stack_patches changed its input")


REFUSED: dict[str, Callable[[Any], Any]] = {
    "more patches than cells": lambda v: v.stack_patches(GRAY, 2, 2),
    "two channels": lambda v: v.stack_patches(np.zeros((2, 4, 4, 2), np.uint8), 1, 2),
    "shapes differ without pad": lambda v: v.stack_patches([GRAY[0], COLOR[0]], 1, 2),
    "a flat list of numbers": lambda v: v.stack_patches([1, 2, 3], 1, 3),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_stack_patches_both_refuse(case: str) -> None:
    got = both(REFUSED[case])
    assert got["tensorpack"][0] == "raises", f"{case}: tensorpack accepted it; the case is wrong"
    assert got["trainstack"][0] == "raises", (
        f"{case}: trainstack returned a grid, tensorpack raised {got['tensorpack'][1]}")
    assert got["trainstack"][1] == "ValueError", (
        f"{case}: trainstack raised {got['trainstack'][1]}, expected ValueError")


# --- gen_stack_patches -------------------------------------------------------------------------

MANY = patches(23, 9, 11, c=3, seed=5)
MANY_GRAY = patches(10, 16, 16, seed=6)

GEN_CASES: dict[str, tuple[np.ndarray, dict[str, Any]]] = {
    "2x3 grids, last part-filled": (MANY, dict(nr_row=2, nr_col=3, border=1)),
    "5x2 exactly full": (MANY_GRAY, dict(nr_row=5, nr_col=2, bgcolor=0)),
    "sized by max_width/max_height": (MANY, dict(max_width=50, max_height=30)),
    "rows given, columns from max_width": (MANY_GRAY, dict(nr_row=2, max_width=40, border=3, bgcolor=(5, 6, 7))),
    "columns given, rows from max_height": (MANY, dict(nr_col=4, max_height=25, border=0)),
    "default sizes (1000 x 1000)": (MANY_GRAY, dict()),
    "one grid bigger than the list": (MANY_GRAY[:3], dict(nr_row=4, nr_col=4, border=2)),
}


@pytest.mark.parametrize("case", list(GEN_CASES))
def test_gen_stack_patches_same_sequence(case: str) -> None:
    plist, kwargs = GEN_CASES[case]
    sequences = {}
    for name, lib in VIZ.items():
        grids = list(lib.gen_stack_patches(plist, **kwargs))
        assert all(g is grids[0] for g in grids), f"{name}: every grid should be the same array, redrawn"
        sequences[name] = [observe(g.copy()) for g in lib.gen_stack_patches(plist, **kwargs)]
    assert len(sequences["trainstack"]) == len(sequences["tensorpack"]), (
        f"{case}: trainstack yields {len(sequences['trainstack'])} grids, tensorpack {len(sequences['tensorpack'])}")
    for i, (tp_grid, ts_grid) in enumerate(zip(sequences["tensorpack"], sequences["trainstack"])):
        assert ts_grid[:3] == tp_grid[:3], f"{case}, grid {i}: dtype/shape {ts_grid[1:3]}, expected {tp_grid[1:3]}"
        assert ts_grid == tp_grid, f"{case}, grid {i}: pixels differ from tensorpack's"


def test_gen_stack_patches_of_one_page_equals_stack_patches() -> None:
    for lib in VIZ.values():
        (page,) = list(lib.gen_stack_patches(MANY[:6], nr_row=2, nr_col=3, border=1))
        np.testing.assert_array_equal(page, lib.stack_patches(MANY[:6], 2, 3, border=1))


# --- draw_boxes, draw_text -----------------------------------------------------------------------

IMAGE = np.random.RandomState(7).randint(0, 256, size=(60, 80, 3)).astype(np.uint8)
BOXES = np.array([[2, 3, 40, 30], [10, 12, 79, 59], [30, 0, 36, 5], [0, 40, 20, 60]])

BOX_CASES: dict[str, Callable[[Any], Any]] = {
    "color image, default color": lambda v: v.draw_boxes(IMAGE, BOXES),
    "color image, labels, BGR color": lambda v: v.draw_boxes(IMAGE, BOXES, labels=["a", "cat", "x", "long label"],
                                                             color=(200, 20, 90)),
    "boxes as a list of floats": lambda v: v.draw_boxes(IMAGE, [[1.7, 2.2, 30.9, 20.5], [0, 0, 80, 60]]),
    "one box on the image's edge": lambda v: v.draw_boxes(IMAGE, [[0, 0, 80, 60]], labels=["edge"]),
    "gray HW image": lambda v: v.draw_boxes(IMAGE[:, :, 0], BOXES[:2], labels=["p", "q"]),
    "gray HW1 image": lambda v: v.draw_boxes(IMAGE[:, :, 1:2], BOXES[1:]),
    "labels at the right and top edges": lambda v: v.draw_boxes(IMAGE, [[70, 1, 79, 8]], labels=["far right"]),
    "draw_text": lambda v: v.draw_text(IMAGE, (50, 4), "text", (0, 255, 0), font_scale=0.6),
    "draw_text, float image": lambda v: v.draw_text(IMAGE.astype(np.float32), (3, 50), "t", (9, 9, 9)),
}


@pytest.mark.parametrize("case", list(BOX_CASES))
def test_draw_boxes_same_pixels(case: str) -> None:
    before = IMAGE.copy()
    _, dtype, shape, _ = assert_same(BOX_CASES[case], case)
    assert dtype == "|u1" and shape[:2] == IMAGE.shape[:2] and shape[2] == 3
    np.testing.assert_array_equal(IMAGE, before, err_msg=f"{case}: the input image was changed")


BOX_REFUSED: dict[str, Callable[[Any], Any]] = {
    "x2 past the width": lambda v: v.draw_boxes(IMAGE, [[0, 0, 81, 10]]),
    "negative y1": lambda v: v.draw_boxes(IMAGE, [[0, -1, 5, 10]]),
    "empty box (x2 < x1)": lambda v: v.draw_boxes(IMAGE, [[10, 0, 8, 10]]),
    "labels and boxes differ in number": lambda v: v.draw_boxes(IMAGE, BOXES, labels=["a"]),
}


@pytest.mark.parametrize("case", list(BOX_REFUSED))
def test_draw_boxes_both_refuse(case: str) -> None:
    got = both(BOX_REFUSED[case])
    assert got["tensorpack"][0] == "raises", f"{case}: tensorpack accepted it; the case is wrong"
    assert got["trainstack"] == ("raises", "ValueError"), (
        f"{case}: trainstack gave {got['trainstack']}, expected a ValueError (tensorpack: {got['tensorpack'][1]})")


# --- the documented differences ----------------------------------------------------------------

def test_difference_no_boxes_is_the_image_in_trainstack() -> None:
    """tensorpack fails on an empty 0x4 box array (``areas.min()`` of nothing); trainstack
    returns a BGR copy of the image."""
    none = np.zeros((0, 4))
    assert both(lambda v: v.draw_boxes(IMAGE, none))["tensorpack"][0] == "raises"
    out = ts_viz.draw_boxes(IMAGE[:, :, 0], none)
    assert out.shape == IMAGE.shape and (out == IMAGE[:, :, :1]).all()


def test_difference_clicks_find_the_patch_by_its_height() -> None:
    """tensorpack's Canvas divides the click's y by the patch *width* (a bug with non-square
    patches: clicks pick the wrong patch); trainstack divides it by the height. Equal for
    square patches."""
    args = dict(nr_row=3, nr_col=3, channel=3, border=2, bgcolor=255)
    tp_square, ts_square = (lib.Canvas(10, 10, **args) for lib in (tp_viz, ts_viz))
    for x, y in [(0, 0), (13, 5), (25, 25), (11, 30)]:
        assert ts_square.get_patchid_from_coord(x, y) == tp_square.get_patchid_from_coord(x, y)
    tp_tall, ts_tall = (lib.Canvas(20, 5, **args) for lib in (tp_viz, ts_viz))
    # (x=1, y=25) is in the second row's first patch (rows are 20 + 2 pixels apart)
    assert ts_tall.get_patchid_from_coord(1, 25) == 3
    assert tp_tall.get_patchid_from_coord(1, 25) == 9
